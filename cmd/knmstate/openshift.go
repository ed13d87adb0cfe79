package main

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/spf13/cobra"

	"github.com/knmstate/knmstate/internal/openshift"
)

func newOpenShiftCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "openshift",
		Short: "OpenShift node flows outside the cluster's API (install-time NMState per host)",
	}
	root.AddCommand(newOpenShiftRenderCmd())
	return root
}

type renderOptions struct {
	installConfig string
	dir           string
	render        openshift.RenderOptions
}

func (o *renderOptions) validate() error {
	if o.installConfig == "" {
		return errors.New("--install-config: required")
	}
	if o.dir == "" {
		return errors.New("--dir: required")
	}
	return nil
}

func newOpenShiftRenderCmd() *cobra.Command {
	o := &renderOptions{}
	cmd := &cobra.Command{
		Use:   "render --install-config FILE --dir OUT",
		Short: "Validate install-config's per-host NMState and write the MachineConfigs that apply it at first boot",
		Long: `Reads networking.networkType and networking.hostConfig[] (name, networkConfig;
YAML anchors resolved) of an install-config, validates every host's NMState
with knmstate's engine (and, with OVNKubernetes, that it builds br-ex), and
writes into OUT, for the master and worker roles, a MachineConfig carrying
/etc/nmstate/openshift/<host>.yml for every host and the first-boot unit
(` + openshift.FirstBootUnit + `). With --ephemeral-networkmanager, also the
MachineConfigs that keep NetworkManager's run-time profiles in /run.
Copy OUT's files into the installer's manifests directory.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			data, err := os.ReadFile(o.installConfig)
			if err != nil {
				return fmt.Errorf("reading install-config: %w", err)
			}
			ic, err := openshift.ParseInstallConfig(data)
			if err != nil {
				return fmt.Errorf("%s:\n%w", o.installConfig, err)
			}
			files, err := openshift.Render(ic, o.render)
			if err != nil {
				return err
			}
			if err := openshift.WriteManifests(o.dir, files); err != nil {
				return err
			}
			for _, n := range slices.Sorted(maps.Keys(files)) {
				fmt.Fprintf(cmd.OutOrStdout(), "wrote %s/%s\n", o.dir, n)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.installConfig, "install-config", "", "the install-config.yaml to read")
	f.StringVar(&o.dir, "dir", "", "directory the manifests are written to (created if needed)")
	f.StringVar(&o.render.Image, "image", openshift.DefaultImage, "knmstate image the first-boot unit runs")
	f.BoolVar(&o.render.EphemeralNetworkManager, "ephemeral-networkmanager", false, "also render the MachineConfigs that make NetworkManager's run-time profiles vanish at reboot (option C)")
	return cmd
}
