// Command cri-teardown stops and removes every pod sandbox of a CRI runtime,
// so that the runtime runs CNI DEL for each and releases pod IPs and veths
// before the runtime itself is stopped. Debian 12 has no crictl; this is the
// one thing hack/containerd.sh down needs from it.
//
//	cri-teardown --endpoint unix:///run/gokubelet/node/containerd.sock
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	remote "k8s.io/cri-client/pkg"
)

func main() {
	endpoint := flag.String("endpoint", "", "CRI endpoint, e.g. unix:///run/gokubelet/node/containerd.sock")
	timeout := flag.Duration("timeout", 2*time.Minute, "overall deadline")
	verbose := flag.Bool("v", false, "print each pod removed")
	flag.Parse()
	if *endpoint == "" {
		fmt.Fprintln(os.Stderr, "cri-teardown: --endpoint is required")
		os.Exit(2)
	}
	if err := run(*endpoint, *timeout, *verbose); err != nil {
		fmt.Fprintf(os.Stderr, "cri-teardown: %v\n", err)
		os.Exit(1)
	}
}

func run(endpoint string, timeout time.Duration, verbose bool) error {
	rs, err := remote.NewRemoteRuntimeServiceBuilder().WithEndpoint(endpoint).WithConnectionTimeout(10 * time.Second).WithTracerProvider(nil).Build(context.Background())
	if err != nil {
		return fmt.Errorf("connect %s: %w", endpoint, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()

	// A stop can fail transiently (e.g. CNI DEL racing a container exit);
	// retry a few rounds until nothing is left.
	var lastErr error
	for round := 0; round < 5; round++ {
		pods, err := rs.ListPodSandbox(ctx, nil)
		if err != nil {
			return fmt.Errorf("list pod sandboxes: %w", err)
		}
		if len(pods) == 0 {
			return nil
		}
		lastErr = nil
		for _, p := range pods {
			name := p.Id
			if m := p.Metadata; m != nil {
				name = fmt.Sprintf("%s/%s (%s)", m.Namespace, m.Name, p.Id[:min(12, len(p.Id))])
			}
			if err := rs.StopPodSandbox(ctx, p.Id); err != nil {
				lastErr = fmt.Errorf("stop pod %s: %w", name, err)
				continue
			}
			if err := rs.RemovePodSandbox(ctx, p.Id); err != nil {
				lastErr = fmt.Errorf("remove pod %s: %w", name, err)
				continue
			}
			if verbose {
				fmt.Printf("removed pod %s\n", name)
			}
		}
		if ctx.Err() != nil {
			break
		}
		time.Sleep(time.Duration(round) * 500 * time.Millisecond)
	}
	if lastErr == nil {
		lastErr = fmt.Errorf("pod sandboxes still present")
	}
	return lastErr
}
