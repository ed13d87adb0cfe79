package nmstatectl

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/knmstate/knmstate/pkg/backend/nm"
)

type gcOptions struct {
	file string
	// outputDir, when set, receives the files (mode 0600, as
	// NetworkManager requires) instead of standard output.
	outputDir string
}

func newGCCmd(g *globalOptions) *cobra.Command {
	o := &gcOptions{}
	cmd := &cobra.Command{
		Use:   "gc STATE_FILE",
		Short: "Generate NetworkManager keyfiles for a state",
		Long: "Render the NetworkManager profiles (keyfiles) a state becomes, without touching the node, " +
			"as installers pre-render NMState into .nmconnection files for first boot. Prints " +
			"`NetworkManager: [[FILE_NAME, CONTENT], ...]` as upstream nmstatectl gc does, or with " +
			"--output-dir writes the files there. Profiles get stable UUIDs: the same state always gives " +
			"the same files. Ethernet interfaces the state names are assumed to exist.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.file = args[0]
			return runGC(cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	cmd.Flags().StringVar(&o.outputDir, "output-dir", "", "write the keyfiles into this directory instead of printing them")
	return cmd
}

func runGC(stdin io.Reader, stdout, stderr io.Writer, o *gcOptions) error {
	desired, err := readState(stdin, stderr, o.file)
	if err != nil {
		return err
	}
	files, err := nm.GenerateKeyfiles(desired)
	if err != nil {
		return reportErrors(stderr, fmt.Errorf("gc: %w", err))
	}
	if o.outputDir != "" {
		for _, f := range files {
			if err := os.WriteFile(filepath.Join(o.outputDir, f.Name), f.Data, 0o600); err != nil {
				return fmt.Errorf("gc: %w", err)
			}
		}
		return nil
	}
	var pairs []*yaml.Node
	for _, f := range files {
		pairs = append(pairs, &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{
			{Kind: yaml.ScalarNode, Value: f.Name},
			{Kind: yaml.ScalarNode, Value: string(f.Data), Style: yaml.LiteralStyle},
		}})
	}
	doc := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
		{Kind: yaml.ScalarNode, Value: "NetworkManager"},
		{Kind: yaml.SequenceNode, Content: pairs},
	}}
	enc := yaml.NewEncoder(stdout)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return err
	}
	return enc.Close()
}
