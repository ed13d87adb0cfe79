//go:build !notestbed

package main

import (
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/knmstate/knmstate/internal/testbed/lab"
	"github.com/knmstate/knmstate/internal/testbed/lab/nodeinit"
)

// labSelect are the flags every lab subcommand takes to select a lab.
type labSelect struct {
	name string
	dir  string
}

func (s *labSelect) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&s.name, "name", lab.DefaultName, "the lab's name (part of its namespaces' names)")
	cmd.Flags().StringVar(&s.dir, "dir", "", "the lab's directory (default "+lab.DefaultDir("NAME")+")")
}

func (s *labSelect) resolve() (string, error) { return lab.ResolveDir(s.name, s.dir) }

func newLabCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "lab",
		Short: "A local knmstate cluster: control plane plus nodes as network namespaces",
		Long: `A local knmstate cluster on this machine (see docs/lab.md): etcd and
kube-apiserver inside a switch network namespace, nodes as network
namespaces with NICs on the switch, a handler per node and the controller.
Needs root. Several labs coexist when their --name and --dir differ.`,
	}
	root.AddCommand(newLabUpCmd(), newLabRunCmd(), newLabDownCmd(), newLabStatusCmd(), newLabExecCmd(), newLabRebootCmd(), newLabKillCmd(), newLabPartitionCmd(), newLabNodeInitCmd(), newLabGuestCmd())
	return root
}

func newLabUpCmd() *cobra.Command {
	var sel labSelect
	opts := lab.Options{}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start a lab and wait until every node reports its NodeNetworkState",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := sel.resolve()
			if err != nil {
				return err
			}
			opts.Name, opts.Dir = sel.name, dir
			st, err := lab.Up(cmd.Context(), opts)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			var nodes []string
			for _, n := range st.Nodes {
				nodes = append(nodes, fmt.Sprintf("%s (%s, %s)", n.Name, n.Role, n.Address))
			}
			fmt.Fprintf(out, "lab %s ready in %v: %s\n", st.Name, time.Duration(st.ReadyAfter).Round(time.Millisecond), strings.Join(nodes, ", "))
			for _, n := range st.Notes {
				fmt.Fprintf(out, "note: %s\n", n)
			}
			fmt.Fprintf(out, "supervisor pid %d, files in %s\n", st.PID, st.Dir)
			fmt.Fprintf(out, "kubeconfig: %s\n", st.Kubeconfig)
			fmt.Fprintf(out, "export KUBECONFIG=%s\n", st.Kubeconfig)
			return nil
		},
	}
	sel.register(cmd)
	cmd.Flags().IntVar(&opts.Nodes, "nodes", 3, fmt.Sprintf("number of nodes (1..%d); the first is the control-plane node", lab.MaxNodes))
	cmd.Flags().StringVar(&opts.APIServer, "kube-apiserver", "", "kube-apiserver binary (default: next to this binary, else the repository's bin/)")
	cmd.Flags().StringVar(&opts.Nmstatectl, "nmstatectl", "", "nmstatectl binary running each node's DHCP (default: this binary's nmstatectl subcommand); \"none\": no node runtime, eth0 is configured statically")
	cmd.Flags().DurationVar(&opts.Heartbeat, "heartbeat", lab.DefaultHeartbeat, "period of the nodes' Ready heartbeat")
	cmd.Flags().StringArrayVar(&opts.HandlerArgs, "handler-arg", nil, "argument appended to every node's `knmstate handler` command (repeatable), e.g. --handler-arg=--max-retries=1")
	registerKubeletFlags(cmd, &opts)
	registerGuestFlags(cmd, &opts)
	registerNodeFlags(cmd, &opts)
	return cmd
}

// registerGuestFlags are the flags of guest mode (lab up and lab run).
func registerGuestFlags(cmd *cobra.Command, opts *lab.Options) {
	cmd.Flags().StringVar(&opts.Kernel, "kernel", "", "run the nodes on another kernel, in a qemu guest: \""+lab.KernelDebian+"\" is Debian's kernel of the kernel lane (bonding, 802.1q, VRF, bridge VLAN filtering; see docs/lab.md)")
	cmd.Flags().StringVar(&opts.KernelCache, "kernel-cache", "", "the kernel lane's cache holding the kernel (default: the repository's .cache/kernel-lane; hack/kernel-lane/kernel.sh fills it)")
	cmd.Flags().IntVar(&opts.GuestMemory, "guest-memory", lab.DefaultGuestMemory, "the guest's memory in MiB")
	cmd.Flags().IntVar(&opts.GuestCPUs, "guest-cpus", 2, "the guest's CPUs")
	cmd.Flags().StringVar(&opts.Backend, "backend", lab.BackendKernel, "the nodes' network backend: kernel, or networkmanager (each node runs its own NetworkManager on a private bus, and its handler drives it)")
}

// registerKubeletFlags are the flags of kubelet mode (lab up and lab run).
func registerKubeletFlags(cmd *cobra.Command, opts *lab.Options) {
	cmd.Flags().BoolVar(&opts.Kubelet, "kubelet", false, "real kubelets, containerd and kube-proxy on the nodes, knmstate as pods of deploy/knmstate pulled from a registry in the lab (see docs/lab.md)")
	cmd.Flags().StringVar(&opts.KubeBinDir, "kube-bin-dir", "", "directory of kubelet, kube-proxy, kube-controller-manager, kube-scheduler and containerd (default: that of kube-apiserver)")
	cmd.Flags().StringVar(&opts.Install, "install", lab.InstallManifests, "what of knmstate kubelet mode installs: manifests (deploy/knmstate), operator (the bundle of deploy/operator and an NMState), payload (deploy/openshift, with --openshift-platform) or none")
	cmd.Flags().StringVar(&opts.OpenShiftPlatform, "openshift-platform", "", "play OpenShift with this platform type (BareMetal, AWS, None, ...): config.openshift.io CRDs, infrastructure/cluster, a service CA, and deploy/openshift applied as the Cluster Version Operator would (see docs/openshift.md)")
	cmd.Flags().StringArrayVar(&opts.MoreImages, "more-images", nil, "more directories of images of make images (other versions), served by the lab registry too (repeatable)")
	cmd.Flags().StringVar(&opts.Images, "images", "", "directory of the images of `make images` (default: images/ next to this binary, else the repository's bin/images)")
}

// newLabRunCmd is the supervisor `lab up` starts detached; not for users.
func newLabRunCmd() *cobra.Command {
	var sel labSelect
	opts := lab.Options{}
	cmd := &cobra.Command{
		Use:    "run",
		Short:  "Run a lab's supervisor in the foreground (started by lab up)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := sel.resolve()
			if err != nil {
				return err
			}
			opts.Name, opts.Dir = sel.name, dir
			return lab.Run(cmd.Context(), opts)
		},
	}
	sel.register(cmd)
	cmd.Flags().IntVar(&opts.Nodes, "nodes", 3, "number of nodes")
	cmd.Flags().StringVar(&opts.APIServer, "kube-apiserver", "", "kube-apiserver binary")
	cmd.Flags().StringVar(&opts.Nmstatectl, "nmstatectl", "", "nmstatectl binary")
	cmd.Flags().DurationVar(&opts.Heartbeat, "heartbeat", lab.DefaultHeartbeat, "period of the nodes' Ready heartbeat")
	cmd.Flags().StringArrayVar(&opts.HandlerArgs, "handler-arg", nil, "argument appended to every node's `knmstate handler` command (repeatable), e.g. --handler-arg=--max-retries=1")
	registerKubeletFlags(cmd, &opts)
	registerGuestFlags(cmd, &opts)
	registerNodeFlags(cmd, &opts)
	return cmd
}

// newLabGuestCmd is the agent of guest mode, run by the guest's /init;
// not for users.
func newLabGuestCmd() *cobra.Command {
	var config string
	cmd := &cobra.Command{
		Use:    "guest --config FILE",
		Short:  "Run the lab's agent inside its qemu guest (started by the guest's /init)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return lab.RunGuest(cmd.Context(), config)
		},
	}
	cmd.Flags().StringVar(&config, "config", "", "the agent's configuration (JSON)")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

// newLabNodeInitCmd is PID 1 of a node in kubelet mode; not for users.
func newLabNodeInitCmd() *cobra.Command {
	var specPath string
	cmd := &cobra.Command{
		Use:    "node-init --spec FILE",
		Short:  "Run a lab node's init (started by the lab in kubelet mode)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			spec, err := nodeinit.ReadSpec(specPath)
			if err != nil {
				return err
			}
			return nodeinit.Run(cmd.Context(), spec, slog.New(slog.NewTextHandler(os.Stderr, nil)))
		},
	}
	cmd.Flags().StringVar(&specPath, "spec", "", "the node's init spec (JSON)")
	_ = cmd.MarkFlagRequired("spec")
	return cmd
}

func newLabDownCmd() *cobra.Command {
	var sel labSelect
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop a lab and remove every process, namespace, mount and file it created",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := sel.resolve()
			if err != nil {
				return err
			}
			if err := lab.Down(cmd.Context(), sel.name, dir); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "lab in %s is down\n", dir)
			return nil
		},
	}
	sel.register(cmd)
	return cmd
}

func newLabStatusCmd() *cobra.Command {
	var sel labSelect
	cmd := &cobra.Command{
		Use:   "status",
		Short: "List a lab's processes and nodes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := sel.resolve()
			if err != nil {
				return err
			}
			return lab.Status(cmd.Context(), dir, cmd.OutOrStdout())
		},
	}
	sel.register(cmd)
	return cmd
}

func newLabExecCmd() *cobra.Command {
	var sel labSelect
	cmd := &cobra.Command{
		Use:   "exec NODE -- CMD [ARGS...]",
		Short: "Run a command inside a node's network, mount and UTS namespaces",
		Example: `  knmstate lab exec node01 -- ip addr
  knmstate lab exec node02 -- cat /etc/resolv.conf`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := sel.resolve()
			if err != nil {
				return err
			}
			command := args[1:]
			if command[0] == "--" { // kept by cobra when flags stop at NODE
				command = command[1:]
			}
			code, err := lab.Exec(cmd.Context(), dir, args[0], command, os.Stdin, cmd.OutOrStdout(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if code != 0 {
				// The command's own status, as ssh or kubectl exec do.
				os.Exit(code)
			}
			return nil
		},
	}
	sel.register(cmd)
	// Everything after NODE belongs to the command, dashes included.
	cmd.Flags().SetInterspersed(false)
	return cmd
}

func newLabRebootCmd() *cobra.Command {
	var sel labSelect
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "reboot NODE",
		Short: "Reboot a node: its network state wiped, its handler restarted; wait until its Available policies are back",
		Long: `Does to a lab node what a reboot does to a machine whose network changes are
not persisted: its handler, node runtime and Open vSwitch stop, its namespaces
and NICs are made anew (no addresses, no routes, no bridges, an empty OVS
database, no DHCP lease), eth0 gets its address by DHCP from scratch and the
handler starts again. Then waits until every enactment of the node that was
Available before is Available again (applied anew) and reports the time.
In kubelet mode the node's init stops (containerd, the kubelet, its pods,
NetworkManager) with its /run, and starts again; /var/lib and NetworkManager's
persistent profiles are kept; the wait is for its handler pod to be Ready
again and the enactments Available. A NetworkManager node of the default
and guest modes keeps its persistent profiles and NetworkManager's leases
too; NetworkManager starts again before the handler, and the reboot returns
once the node's address is back on whichever link those profiles put it.
In guest mode the node is rebooted inside the guest.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := sel.resolve()
			if err != nil {
				return err
			}
			st, err := lab.ReadState(dir)
			if err != nil {
				return err
			}
			node := args[0]
			if _, err := st.Node(node); err != nil {
				return err
			}
			before, err := lab.AvailableEnactments(cmd.Context(), st.Kubeconfig, node)
			if err != nil {
				return err
			}
			if d := time.Until(lab.RebootNotBefore(before)); len(before) > 0 && d > 0 {
				select {
				case <-cmd.Context().Done():
					return cmd.Context().Err()
				case <-time.After(d):
				}
			}
			res, err := lab.Reboot(cmd.Context(), dir, node)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "node %s rebooted: down in %v, namespaces, NICs and DHCP lease back after %v, handler restarted\n",
				node, time.Duration(res.Down).Round(time.Millisecond), time.Duration(res.Up).Round(time.Millisecond))
			if len(before) == 0 {
				fmt.Fprintf(out, "no Available enactments on %s before the reboot: nothing to wait for\n", node)
				return nil
			}
			names := slices.Sorted(maps.Keys(before))
			if !st.Kubelet && st.Backend() == lab.BackendNetworkManager {
				// Persistent profiles brought the state back before the
				// handler started: it has nothing to apply again.
				now, err := lab.AvailableEnactments(cmd.Context(), st.Kubeconfig, node)
				if err != nil {
					return err
				}
				var missing []string
				for _, n := range names {
					if _, ok := now[n]; !ok {
						missing = append(missing, n)
					}
				}
				if len(missing) > 0 {
					return fmt.Errorf("not Available after the reboot: %s", strings.Join(missing, ", "))
				}
				fmt.Fprintf(out, "%d enactments Available, their state back from NetworkManager's persistent profiles: %s\n",
					len(names), strings.Join(names, ", "))
				return nil
			}
			wait := lab.WaitAvailableAgain
			if st.Kubelet {
				// The handler is a pod its kubelet restarts; persistent
				// profiles may have brought the policies back already.
				wait = lab.WaitHandlerBack
			}
			at, err := wait(cmd.Context(), st.Kubeconfig, node, before, res.Start, timeout)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "%d enactments Available again %v after the reboot: %s\n",
				len(names), at.Sub(res.Start).Round(time.Millisecond), strings.Join(names, ", "))
			return nil
		},
	}
	sel.register(cmd)
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait for the enactments")
	return cmd
}

func newLabKillCmd() *cobra.Command {
	var sel labSelect
	var hold time.Duration
	cmd := &cobra.Command{
		Use:   "kill COMPONENT [NODE]",
		Short: "SIGKILL a lab component: apiserver, etcd, controller (the leader), handler NODE, node NODE",
		Long: `Kills a component of a running lab as a crash would (SIGKILL), for fault
tests and to watch knmstate recover (docs/reliability.md):

  apiserver, etcd   the control plane's process; back at once, or after --for
  controller        the leading controller (kubelet mode: the pod holding the
                    leader Lease; the other replica takes over)
  handler NODE      the node's handler process (kubelet mode: its pod's
                    container; the kubelet restarts it)
  node NODE         kubelet mode: the node's init, and with it its kubelet,
                    containerd and every pod, and its node runtime; default
                    mode: its handler and node runtime. Its network namespace
                    and what is configured there stay, as on a hung machine

With --for the component stays down that long (a pod's restarted containers
are killed again) and then comes back.`,
		Example: `  knmstate lab kill apiserver --for 30s
  knmstate lab kill handler node03`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := sel.resolve()
			if err != nil {
				return err
			}
			f := lab.Fault{Component: args[0], For: lab.Duration(hold)}
			if len(args) == 2 {
				f.Node = args[1]
			}
			return injectFault(cmd, dir, f)
		},
	}
	sel.register(cmd)
	cmd.Flags().DurationVar(&hold, "for", 0, "keep the component down this long, then bring it back")
	return cmd
}

func newLabPartitionCmd() *cobra.Command {
	var sel labSelect
	var hold time.Duration
	cmd := &cobra.Command{
		Use:   "partition NODE --for DURATION",
		Short: "Cut a node off from the API server for a while",
		Long: `Drops the node's traffic to the API server (192.0.2.1:6443, also what the
kubernetes Service's ClusterIP leads to) with an nftables table in the
node's own network namespace, never this machine's, and removes it after
--for. Everything else of the node keeps working.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := sel.resolve()
			if err != nil {
				return err
			}
			return injectFault(cmd, dir, lab.Fault{Component: lab.FaultPartition, Node: args[0], For: lab.Duration(hold)})
		},
	}
	sel.register(cmd)
	cmd.Flags().DurationVar(&hold, "for", 0, "how long the node stays cut off (required)")
	return cmd
}

func injectFault(cmd *cobra.Command, dir string, f lab.Fault) error {
	res, err := lab.Inject(cmd.Context(), dir, f)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	verb := "killed"
	if f.Component == lab.FaultPartition {
		verb = "cut off"
	}
	fmt.Fprintf(out, "%s %s at %s", verb, res.Target, res.At.Format(time.RFC3339Nano))
	if len(res.PIDs) > 0 {
		fmt.Fprintf(out, " (pids %v)", res.PIDs)
	}
	fmt.Fprintln(out)
	if f.For > 0 {
		fmt.Fprintf(out, "back after %v\n", time.Duration(f.For))
	}
	return nil
}

func registerNodeFlags(cmd *cobra.Command, opts *lab.Options) {
	cmd.Flags().BoolVar(&opts.NoOVS, "no-ovs", false, "nodes without Open vSwitch (default mode; without this the lab refuses to start when Debian's openvswitch-switch is missing)")
	cmd.Flags().StringVar(&opts.NMOVSBuild, "nm-ovs-build", "", "with --backend networkmanager: the NetworkManager built with its OVS plugin (make setup's bin/nm-ovs; default: next to this binary, else the repository's)")
	cmd.Flags().StringVar(&opts.FirstBootDir, "first-boot-dir", "", "OpenShift-style NODE.yml / cluster.yml files every node applies with `nmstatectl first-boot` at each boot (lab up, lab reboot) before its handler starts (docs/openshift.md)")
}
