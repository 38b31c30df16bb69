// Command pause is the sandbox ("pause") container of the local cluster's real node.
//
// Why it exists: every Pod's network namespace is held open by one process that does
// nothing else. The cluster must never pull images (no network here), so the image is built
// from this source instead of registry.k8s.io/pause. Like the upstream pause it runs as
// PID 1 of the pod: it waits for SIGTERM or SIGINT and reaps children (zombies of a shared
// PID namespace) while it waits. Standard library only, built static (CGO_ENABLED=0).
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for sig := range signals {
		if sig == syscall.SIGCHLD {
			reap()
			continue
		}
		fmt.Fprintf(os.Stderr, "pause: received %v, exiting\n", sig)
		os.Exit(0)
	}
}

// reap collects every exited child without blocking.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
