// Tests of the process lifecycle through run(), which returns the exit code instead of exiting:
// --crash-after decided on a fake clock (exit code 3 and a clear log line, never earlier), a stop
// signal (a cancelled context) gives a clean exit 0, bad configuration exits 2 with one line on
// stderr, --help prints the usage. The servers listen on 127.0.0.1 and a port the OS picks.
package main

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// bound is how long a test waits for something that should happen at once; it fails, never sleeps.
const bound = 10 * time.Second

type running struct {
	clock  *fakeClock
	stdout *syncBuffer
	stderr *syncBuffer
	stop   context.CancelFunc
	code   chan int
}

func start(t *testing.T, args ...string) running {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	r := running{clock: newFakeClock(), stdout: &syncBuffer{}, stderr: &syncBuffer{}, stop: stop, code: make(chan int, 1)}
	args = append([]string{"--model", "m", "--host", "127.0.0.1", "--port", "0"}, args...)
	go func() { r.code <- run(ctx, args, noEnv, r.stdout, r.stderr, r.clock) }()
	return r
}

// timers waits until run has started n timers on the fake clock, and returns their durations.
func (r running) timers(t *testing.T, n int) []time.Duration {
	t.Helper()
	var got []time.Duration
	for len(got) < n {
		select {
		case d := <-r.clock.registered:
			got = append(got, d)
		case code := <-r.code:
			t.Fatalf("run returned %d before starting its timers; stdout:\n%s\nstderr:\n%s", code, r.stdout, r.stderr)
		case <-time.After(bound):
			t.Fatalf("run started %d timers, want %d", len(got), n)
		}
	}
	return got
}

func (r running) exitCode(t *testing.T) int {
	t.Helper()
	select {
	case code := <-r.code:
		return code
	case <-time.After(bound):
		t.Fatalf("run did not return within %s; stdout:\n%s", bound, r.stdout)
		return -1
	}
}

func TestCrashTimerFiresAtTheDeadlineAndNotBefore(t *testing.T) {
	clk := newFakeClock()
	crash := crashTimer(clk, 30*time.Second)
	clk.Advance(29*time.Second + 999*time.Millisecond)
	select {
	case <-crash:
		t.Fatal("fired before --crash-after elapsed")
	default:
	}
	clk.Advance(time.Millisecond)
	select {
	case <-crash:
	default:
		t.Fatal("did not fire when --crash-after elapsed")
	}
}

func TestNoCrashTimerWhenCrashAfterIsZero(t *testing.T) {
	clk := newFakeClock()
	if crash := crashTimer(clk, 0); crash != nil {
		t.Fatal("a zero --crash-after must never fire")
	}
	if len(clk.registered) != 0 {
		t.Fatal("a zero --crash-after must start no timer")
	}
}

func TestRunExitsWithCode3AndSaysWhyWhenCrashAfterElapses(t *testing.T) {
	r := start(t, "--crash-after", "30s", "--load-delay", "1s")
	if got := r.timers(t, 2); got[0] != 30*time.Second || got[1] != time.Second {
		t.Fatalf("timers: %v, want [30s 1s]", got)
	}
	r.clock.Advance(30 * time.Second)
	if code := r.exitCode(t); code != exitCrash {
		t.Fatalf("exit code %d, want %d", code, exitCrash)
	}
	if !strings.Contains(r.stdout.String(), "Crashing on purpose: --crash-after elapsed (set by flag or STANDIN_CRASH_AFTER); exiting with code 3") {
		t.Errorf("no crash line in:\n%s", r.stdout)
	}
}

func TestRunStopsCleanlyOnASignalAndLogsTheLoad(t *testing.T) {
	r := start(t, "--load-delay", "5s", "--max-model-len", "8192")
	r.timers(t, 1)
	r.clock.Advance(5 * time.Second)
	r.stdout.waitFor(t, `msg="Loaded model (pretend): /health answers 200 from now on" model=m after=5s`)
	r.stop()
	if code := r.exitCode(t); code != 0 {
		t.Fatalf("exit code %d after a stop signal, want 0", code)
	}
	out := r.stdout.String()
	for _, want := range []string{
		`msg="Ignored option: the stand-in accepts it for vLLM compatibility and does nothing with it" option="--max-model-len 8192"`,
		`msg="Started stand-in inference server" model=m address=127.0.0.1:`,
		`msg="Received a stop signal; shutting down" grace=10s`,
		`msg=Stopped`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

func TestRunExitsWithCode2AndOneLineOnABadCommandLine(t *testing.T) {
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	code := run(context.Background(), []string{"--port", "80"}, noEnv, stdout, stderr, newFakeClock())
	if code != exitUsage || stdout.String() != "" {
		t.Fatalf("exit code %d, stdout %q", code, stdout)
	}
	if got := stderr.String(); got != "standin: --model is required (the operator passes spec.model as --model) (see standin --help)\n" {
		t.Errorf("stderr: %q", got)
	}
}

func TestHelpPrintsTheUsageAndExits0(t *testing.T) {
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	if code := run(context.Background(), []string{"--help"}, noEnv, stdout, stderr, newFakeClock()); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if !strings.HasPrefix(stdout.String(), "Usage: standin --model NAME") || stderr.String() != "" {
		t.Errorf("stdout %q stderr %q", stdout, stderr)
	}
}

func TestRunExits1WhenThePortIsTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port
	stdout := &syncBuffer{}
	code := run(context.Background(), []string{"--model", "m", "--host", "127.0.0.1", "--port", strconv.Itoa(port)}, noEnv, stdout, &syncBuffer{}, newFakeClock())
	if code != 1 || !strings.Contains(stdout.String(), "Could not listen; is another process using the port?") {
		t.Errorf("exit code %d, stdout:\n%s", code, stdout)
	}
}
