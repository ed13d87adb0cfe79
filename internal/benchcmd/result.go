package benchcmd

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Result is one row of the bench output. Value, Baseline and Ratio are
// nil when there is nothing to report (no baseline, or the measurement
// could not be taken: Note says why).
type Result struct {
	Name  string   `json:"name"`
	Value *float64 `json:"value"`
	Unit  string   `json:"unit"`
	// Baseline is the same figure for the reference implementation
	// (iproute2, upstream), in Unit.
	Baseline *float64 `json:"baseline"`
	// Ratio is Value / Baseline.
	Ratio *float64 `json:"ratio"`
	// Target is what the issue asks for, as text ("<= 1.5", "0").
	Target string `json:"target"`
	// Note qualifies the row: how it was measured, or why it is missing.
	Note string `json:"note,omitempty"`
}

// num returns a pointer to v, for Result's optional numbers.
func num(v float64) *float64 { return &v }

// withRatio sets Baseline and, when it is not zero, Ratio.
func (r Result) withRatio(baseline float64) Result {
	r.Baseline = num(baseline)
	if baseline != 0 {
		r.Ratio = num(*r.Value / baseline)
	}
	return r
}

// formatNumber renders a figure with four significant digits, without an
// exponent for large whole numbers (nanoseconds, bytes).
func formatNumber(p *float64) string {
	if p == nil {
		return "-"
	}
	v := *p
	if math.Abs(v) >= 1e4 {
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// WriteTable renders results as an aligned table with a header.
func WriteTable(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVALUE\tUNIT\tBASELINE\tRATIO\tTARGET\tNOTE")
	for _, r := range results {
		target := r.Target
		if target == "" {
			target = "-"
		}
		unit := r.Unit
		if unit == "" {
			unit = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, formatNumber(r.Value), unit,
			formatNumber(r.Baseline), formatNumber(r.Ratio), target, oneLine(r.Note))
	}
	return tw.Flush()
}

// oneLine keeps a note on its table row.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// WriteJSON writes results as an indented JSON array (an empty array, not
// null, when there are none).
func WriteJSON(w io.Writer, results []Result) error {
	if results == nil {
		results = []Result{}
	}
	// Targets hold "<" and ">": kept readable, not escaped for HTML.
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(results); err != nil {
		return fmt.Errorf("encoding results: %w", err)
	}
	return nil
}
