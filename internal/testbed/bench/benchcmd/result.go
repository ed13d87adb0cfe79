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
	// Previous and PreviousRatio are Value and Ratio of the row of the
	// same name in the previous run's results (see WithPrevious), so that
	// a figure that got worse shows beside the one it is compared with.
	Previous      *float64 `json:"previous,omitempty"`
	PreviousRatio *float64 `json:"previousRatio,omitempty"`
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

// ReadResults decodes rows written by WriteJSON.
func ReadResults(r io.Reader) ([]Result, error) {
	var rows []Result
	if err := json.NewDecoder(r).Decode(&rows); err != nil {
		return nil, fmt.Errorf("decoding results: %w", err)
	}
	return rows, nil
}

// WithPrevious returns results with Previous and PreviousRatio taken from
// the row of the same name in prev (rows prev lacks keep them nil). A
// previous run's own previous figures are not carried over.
func WithPrevious(results, prev []Result) []Result {
	byName := make(map[string]Result, len(prev))
	for _, p := range prev {
		byName[p.Name] = p
	}
	out := make([]Result, len(results))
	for i, r := range results {
		p := byName[r.Name]
		r.Previous, r.PreviousRatio = p.Value, p.Ratio
		out[i] = r
	}
	return out
}

// WriteTable renders results as an aligned table with a header. PREVIOUS
// and PREV RATIO are the previous run's figures (see WithPrevious).
func WriteTable(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVALUE\tPREVIOUS\tUNIT\tBASELINE\tRATIO\tPREV RATIO\tTARGET\tNOTE")
	for _, r := range results {
		target := r.Target
		if target == "" {
			target = "-"
		}
		unit := r.Unit
		if unit == "" {
			unit = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, formatNumber(r.Value), formatNumber(r.Previous), unit,
			formatNumber(r.Baseline), formatNumber(r.Ratio), formatNumber(r.PreviousRatio), target, oneLine(r.Note))
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
