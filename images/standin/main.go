// Command standin is an OpenAI-compatible stand-in for vLLM, for e2e tests on nodes without GPUs.
//
// The operator runs inference servers it knows nothing about beyond `--model`, `--port` and a
// health path. Tests on a real node need a server that behaves like vLLM at that boundary (slow
// to become healthy, OpenAI answers, clean exit on SIGTERM, and on demand a crash) while loading
// no model at all. It writes nothing to disk and needs no privileges: it runs from a scratch
// image as an unprivileged user with a read-only root filesystem.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

const (
	// exitCrash is the exit code of a crash asked for with --crash-after.
	exitCrash = 3
	// exitUsage is the exit code of a bad command line or environment.
	exitUsage = 2
	// shutdownGrace bounds the wait for in-flight requests after SIGTERM; Kubernetes gives 30s by default.
	shutdownGrace = 10 * time.Second
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	// After the first signal, a second one kills at once instead of waiting for the grace period.
	go func() {
		<-ctx.Done()
		stop()
	}()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr, realClock{}))
}

// run parses the configuration and serves until ctx is cancelled (a signal) or --crash-after
// elapses; it returns the process exit code instead of exiting, so tests can drive it.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, clk clock) int {
	cfg, err := parseConfig(args, getenv)
	if errors.Is(err, errHelp) {
		fmt.Fprint(stdout, usage)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "standin: %v (see standin --help)\n", err)
		return exitUsage
	}
	log := slog.New(slog.NewTextHandler(stdout, nil))
	for _, option := range cfg.ignored {
		log.Info("Ignored option: the stand-in accepts it for vLLM compatibility and does nothing with it", "option", option)
	}

	listener, err := net.Listen("tcp", cfg.addr())
	if err != nil {
		log.Error("Could not listen; is another process using the port?", "address", cfg.addr(), "err", err)
		return 1
	}
	srv := newServer(cfg, clk, log)
	crash := crashTimer(clk, cfg.crashAfter)
	loaded := clk.After(cfg.loadDelay)
	httpServer := &http.Server{Handler: srv.handler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- httpServer.Serve(listener) }()
	log.Info("Started stand-in inference server", "model", cfg.model, "address", listener.Addr().String(),
		"loadDelay", cfg.loadDelay, "crashAfter", crashAfterText(cfg.crashAfter))

	for {
		select {
		case <-loaded:
			loaded = nil
			log.Info("Loaded model (pretend): /health answers 200 from now on", "model", cfg.model, "after", cfg.loadDelay)
		case <-crash:
			log.Error("Crashing on purpose: --crash-after elapsed (set by flag or STANDIN_CRASH_AFTER); exiting with code 3",
				"crashAfter", cfg.crashAfter, "exitCode", exitCrash)
			_ = httpServer.Close()
			return exitCrash
		case err := <-served:
			log.Error("HTTP server stopped unexpectedly", "err", err)
			return 1
		case <-ctx.Done():
			log.Info("Received a stop signal; shutting down", "grace", shutdownGrace)
			shutdown, cancel := context.WithTimeout(context.Background(), shutdownGrace)
			defer cancel()
			if err := httpServer.Shutdown(shutdown); err != nil {
				log.Error("Requests still in flight after the grace period; closed them", "grace", shutdownGrace, "err", err)
				_ = httpServer.Close()
				return 1
			}
			log.Info("Stopped")
			return 0
		}
	}
}

// crashTimer fires when the process should crash; it never fires when after is 0 (crash disabled).
// The timer starts when this is called, so call it at startup.
func crashTimer(clk clock, after time.Duration) <-chan time.Time {
	if after <= 0 {
		return nil
	}
	return clk.After(after)
}

func crashAfterText(after time.Duration) string {
	if after <= 0 {
		return "never"
	}
	return after.String()
}
