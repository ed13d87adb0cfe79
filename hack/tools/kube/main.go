// Command kube is one binary holding the Kubernetes components the lab runs:
// kube-apiserver, kubelet, kube-controller-manager, kube-scheduler and
// kube-proxy at the version pinned in hack/tools/go.mod. Linking them once
// shares the common code: the five together are a little larger than the
// kube-apiserver alone, and build once.
//
// It runs the component named by the base name of argv[0] (make setup links
// bin/kubelet and the others to bin/kube), or by its first argument:
// `kube kubelet --version`. Each component gets the command its own main.go
// builds, run by k8s.io/component-base/cli like there, and nothing of the
// other components' commands is constructed.
package main

import (
	"context"
	goflag "flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	_ "time/tzdata" // kube-apiserver and kube-controller-manager: CronJob time zones

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // JSON log format
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	proxy "k8s.io/kubernetes/cmd/kube-proxy/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

// components maps a component's name to its command constructor, as called
// by k8s.io/kubernetes/cmd/<name>/<name>.go.
var components = map[string]func() *cobra.Command{
	"kube-apiserver":          apiserver.NewAPIServerCommand,
	"kube-controller-manager": controllermanager.NewControllerManagerCommand,
	"kube-proxy":              proxyCommand,
	"kube-scheduler":          func() *cobra.Command { return scheduler.NewSchedulerCommand() },
	"kubelet":                 func() *cobra.Command { return kubelet.NewKubeletCommand(context.Background()) },
}

func main() {
	newCommand, ok := components[filepath.Base(os.Args[0])]
	if !ok && len(os.Args) > 1 {
		if newCommand, ok = components[os.Args[1]]; ok {
			// The component sees itself as the program, as when called
			// through its link.
			os.Args = os.Args[1:]
		}
	}
	if !ok {
		names := slices.Sorted(maps.Keys(components))
		fmt.Fprintf(os.Stderr, "usage: kube COMPONENT [flags], or a link named COMPONENT\ncomponents: %s\n", strings.Join(names, ", "))
		os.Exit(2)
	}
	os.Exit(cli.Run(newCommand()))
}

// proxyCommand builds kube-proxy's command with the flags it has when built
// alone. NewProxyCommand adds all of Go's global flag set, which alone holds
// the two flags of cadvisor's machine package; linked with the kubelet it
// also holds some twenty flags of cadvisor's manager, storage and container
// packages, which kube-proxy would then list and accept.
func proxyCommand() *cobra.Command {
	global := goflag.CommandLine
	defer func() { goflag.CommandLine = global }()
	goflag.CommandLine = goflag.NewFlagSet(global.Name(), global.ErrorHandling())
	for _, name := range proxyGoFlags {
		f := global.Lookup(name)
		if f == nil {
			panic("kube-proxy: no global flag " + name)
		}
		goflag.CommandLine.Var(f.Value, f.Name, f.Usage)
	}
	return proxy.NewProxyCommand()
}

// proxyGoFlags are the flags in Go's global flag set of a kube-proxy built
// alone (cmd/kube-proxy/app/server.go: "for --boot-id-file and
// --machine-id-file").
var proxyGoFlags = []string{"boot_id_file", "machine_id_file"}
