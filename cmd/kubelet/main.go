// Command kubelet is the node agent. It reads the KubeletConfiguration file
// and flags (package kubeletconfig decides what they mean), logs any
// warnings about accepted-but-unimplemented settings, and runs the kubelet
// (package kubelet) until SIGTERM or SIGINT.
//
// A configuration error is printed on stderr and the process exits with
// status 1 before anything starts.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/config/kubeletconfig"
	"github.com/gokubelet/kubelet/pkg/kubelet"
)

// applyLogging validates the logging configuration and makes it the
// process's (k8s.io/component-base/logs: text or JSON format, verbosity,
// vmodule). It can take effect once per process; in-process tests replace
// it.
var applyLogging = func(c *logsapi.LoggingConfiguration, fg featuregate.FeatureGate) error {
	return logsapi.ValidateAndApplyAsField(c, fg, field.NewPath("logging"))
}

// runKubelet is what main runs: kubelet.Run (a test of main replaces it).
var runKubelet runFunc = kubelet.Run

// runFunc starts the kubelet; kubelet.Run in production, a fake in tests.
type runFunc func(ctx context.Context, s *kubeletconfig.Settings) error

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	cmd := newCommand(ctx, os.Stdout, os.Stderr, runKubelet)
	err := cmd.Execute()
	stop()
	klog.Flush()
	if err != nil {
		fmt.Fprintf(os.Stderr, "kubelet: %v\n", err)
		os.Exit(1)
	}
}

// newCommand builds the root command. Errors are returned, not printed:
// main prints them and exits 1.
func newCommand(ctx context.Context, stdout, stderr io.Writer, run runFunc) *cobra.Command {
	opts := kubeletconfig.NewOptions()
	var showVersion bool

	cmd := &cobra.Command{
		Use:   "kubelet",
		Short: "The node agent: registers the node and runs the pods bound to it",
		Long: `The kubelet runs on every node. It registers the node with the API server
(or, without --kubeconfig, runs standalone), keeps the node's lease and
status, runs the pods bound to the node (and static pods) through a CRI
container runtime, probes them, and reports their status. It serves healthz,
the kubelet API on --port over HTTPS with authentication and authorization
(/pods, /runningpods/, /containerLogs, /exec, /attach, /portForward, /run,
/logs/, /configz, /debug/pprof/, /stats/summary,
/stats/timeline/<namespace>/<name> (pod startup timelines), /metrics,
/metrics/cadvisor, /metrics/resource, /metrics/probes), and, when enabled,
the read-only API (/healthz, /pods and the stats and metrics endpoints).
With --bootstrap-kubeconfig it obtains its client certificate through a
CertificateSigningRequest (TLS bootstrap).

With --virtual-nodes-config it also runs virtual nodes: nodes whose pods run
elsewhere through a provider (another Kubernetes cluster, or memory), beside
this machine's node or, with realNode: false in that file, instead of it.

Configuration comes from a KubeletConfiguration file (--config,
kubelet.config.k8s.io/v1beta1), then the drop-in files of --config-dir
(*.conf, merged in order), with flags given on the command line taking
precedence. Unknown fields and invalid values are errors; upstream fields
this kubelet does not implement are accepted with a warning naming them.
Every other flag of the upstream kubelet is accepted too (hidden here) and
warned about by name when given; see docs/configuration.md.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unexpected arguments %q: the kubelet takes flags only", args)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if showVersion {
				fmt.Fprintf(stdout, "Kubernetes %s\n", kubelet.Version())
				return nil
			}
			settings, err := opts.Settings()
			if err != nil {
				return err
			}
			// The logging stanza (file, drop-ins, then --logging-format, -v,
			// --vmodule...) takes effect here: text or JSON.
			if err := applyLogging(&settings.Config.Logging, settings.FeatureGates); err != nil {
				return fmt.Errorf("invalid logging configuration: %w", err)
			}
			for _, w := range settings.Warnings {
				klog.Warning(w)
			}
			klog.InfoS("Starting kubelet", "version", kubelet.Version(), "node", settings.NodeName,
				"config", settings.ConfigFile, "dropIns", settings.DropIns, "standalone", settings.Standalone())
			return run(ctx, settings)
		},
	}
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)

	fs := cmd.Flags()
	fs.SetNormalizeFunc(wordSepNormalize)
	fs.BoolVar(&showVersion, "version", false, "Print the kubelet's version and exit.")
	opts.AddFlags(fs)
	return cmd
}

// wordSepNormalize lets flags be spelled with '_' as well as '-', as
// upstream accepts.
func wordSepNormalize(_ *pflag.FlagSet, name string) pflag.NormalizedName {
	return pflag.NormalizedName(strings.ReplaceAll(name, "_", "-"))
}
