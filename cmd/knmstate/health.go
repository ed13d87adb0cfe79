package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
)

// newHealthCmd is the exec probe of the handler's pod: the image has no
// shell, so the check is a subcommand of the binary it holds anyway.
func newHealthCmd() *cobra.Command {
	var file string
	var maxAge time.Duration
	cmd := &cobra.Command{
		Use:    "health --file FILE [--max-age DURATION]",
		Short:  "Exit 0 when a component's ready file exists (and is recent)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return checkReadyFile(file, maxAge, time.Now())
		},
	}
	cmd.Flags().StringVar(&file, "file", "", "the ready file (the handler's --ready-file)")
	cmd.Flags().DurationVar(&maxAge, "max-age", 0, "fail when the file was last touched longer ago than this (0: any age)")
	_ = cmd.MarkFlagRequired("file")
	return cmd
}

func checkReadyFile(file string, maxAge time.Duration, now time.Time) error {
	st, err := os.Stat(file)
	if err != nil {
		return fmt.Errorf("not ready: %w", err)
	}
	if age := now.Sub(st.ModTime()); maxAge > 0 && age > maxAge {
		return fmt.Errorf("not alive: %s last touched %v ago (more than %v)", file, age.Round(time.Second), maxAge)
	}
	return nil
}
