package nmstatectl

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

type formatOptions struct {
	file string // "-" = stdin
	json bool
}

func newFormatCmd(g *globalOptions) *cobra.Command {
	o := &formatOptions{}
	cmd := &cobra.Command{
		Use:     "format [STATE_FILE]",
		Aliases: []string{"f", "fmt"},
		Short:   "Re-emit a state file in canonical form",
		Long: "Decode a YAML or JSON state file strictly and print it in canonical form: " +
			"unset keys omitted, aliases replaced, keys in nmstate's show order. " +
			"STATE_FILE defaults to - (standard input).",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.file = "-"
			if len(args) == 1 {
				o.file = args[0]
			}
			return runFormat(cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON instead of YAML")
	return cmd
}

func runFormat(stdin io.Reader, stdout, stderr io.Writer, o *formatOptions) error {
	s, err := readState(stdin, stderr, o.file)
	if err != nil {
		return err
	}
	enc := nmstate.EncodeYAML
	if o.json {
		enc = nmstate.EncodeJSON
	}
	out, err := enc(s)
	if err != nil {
		return fmt.Errorf("format %s: %w", o.file, err)
	}
	_, err = stdout.Write(out)
	return err
}

// readState reads and strictly decodes a state file ("-" = stdin). Decode
// problems are printed to stderr one per line ("path: reason") and turned
// into exit status 1.
func readState(stdin io.Reader, stderr io.Writer, file string) (*nmstate.State, error) {
	var data []byte
	var err error
	if file == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, fmt.Errorf("reading state: %w", err)
	}
	s, err := nmstate.Decode(data)
	if err != nil {
		return nil, reportErrors(stderr, err)
	}
	return s, nil
}

// reportErrors prints every entry of an nmstate.ErrorList on its own line
// and returns an exit status 1; other errors are returned unchanged.
func reportErrors(stderr io.Writer, err error) error {
	var l nmstate.ErrorList
	if !errors.As(err, &l) {
		return err
	}
	for _, e := range l {
		fmt.Fprintln(stderr, e.Error())
	}
	return &ExitError{Code: 1}
}
