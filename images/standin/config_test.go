// Tests of the command line and environment: the vLLM flags the operator passes, the stand-in's
// own knobs (flag wins over environment), unknown vLLM options accepted, and readable errors.
package main

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func noEnv(string) string { return "" }

func env(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

func mustParse(t *testing.T, getenv func(string) string, args ...string) config {
	t.Helper()
	cfg, err := parseConfig(args, getenv)
	if err != nil {
		t.Fatalf("parseConfig(%q): %v", args, err)
	}
	return cfg
}

func TestTheOperatorsArgumentsGiveTheDefaultsOfVLLM(t *testing.T) {
	cfg := mustParse(t, noEnv, "--model", "facebook/opt-125m")
	if cfg.model != "facebook/opt-125m" || cfg.port != 8000 || cfg.host != "0.0.0.0" {
		t.Errorf("got model=%q port=%d host=%q", cfg.model, cfg.port, cfg.host)
	}
	if cfg.loadDelay != 2*time.Second || cfg.crashAfter != 0 {
		t.Errorf("got loadDelay=%s crashAfter=%s, want 2s and 0 (never)", cfg.loadDelay, cfg.crashAfter)
	}
	if !slices.Equal(cfg.servedNames, []string{"facebook/opt-125m"}) || len(cfg.ignored) != 0 {
		t.Errorf("got servedNames=%q ignored=%q", cfg.servedNames, cfg.ignored)
	}
	if cfg.addr() != "0.0.0.0:8000" {
		t.Errorf("addr() = %q", cfg.addr())
	}
}

func TestFlagsWorkWithEqualsSignsAndUnderscores(t *testing.T) {
	cfg := mustParse(t, noEnv, "--model=m", "--port=9000", "--host=::1", "--load_delay=5s", "--crash-after", "1m")
	if cfg.model != "m" || cfg.port != 9000 || cfg.loadDelay != 5*time.Second || cfg.crashAfter != time.Minute {
		t.Errorf("got %+v", cfg)
	}
	if cfg.addr() != "[::1]:9000" {
		t.Errorf("addr() = %q, want [::1]:9000", cfg.addr())
	}
}

func TestUnknownVLLMOptionsAreAcceptedAndKeptForTheLog(t *testing.T) {
	cfg := mustParse(t, noEnv, "--model", "m", "--port", "8080",
		"--max-model-len", "8192", "--enforce-eager", "--seed", "-1", "--dtype=half",
		"--tensor-parallel-size", "4", "--trust-remote-code")
	want := []string{"--max-model-len 8192", "--enforce-eager", "--seed -1", "--dtype=half",
		"--tensor-parallel-size 4", "--trust-remote-code"}
	if !slices.Equal(cfg.ignored, want) {
		t.Errorf("ignored = %q, want %q", cfg.ignored, want)
	}
	if cfg.model != "m" || cfg.port != 8080 {
		t.Errorf("an unknown option swallowed a known one: %+v", cfg)
	}
}

func TestServedModelNameTakesOneOrMoreNamesAsInVLLM(t *testing.T) {
	cfg := mustParse(t, noEnv, "--model", "/models/llama", "--served-model-name", "llama", "llama-3", "--port", "1")
	if !slices.Equal(cfg.servedNames, []string{"llama", "llama-3"}) || cfg.port != 1 {
		t.Errorf("got servedNames=%q port=%d", cfg.servedNames, cfg.port)
	}
}

func TestTheEnvironmentSetsTheKnobsWhenNoFlagDoes(t *testing.T) {
	cfg := mustParse(t, env(map[string]string{envLoadDelay: "30s", envCrashAfter: "2m"}), "--model", "m")
	if cfg.loadDelay != 30*time.Second || cfg.crashAfter != 2*time.Minute {
		t.Errorf("got loadDelay=%s crashAfter=%s", cfg.loadDelay, cfg.crashAfter)
	}
}

func TestAFlagWinsOverItsEnvironmentVariableEvenAnInvalidOne(t *testing.T) {
	getenv := env(map[string]string{envLoadDelay: "30s", envCrashAfter: "not a duration"})
	cfg := mustParse(t, getenv, "--model", "m", "--load-delay", "0s", "--crash-after", "10s")
	if cfg.loadDelay != 0 || cfg.crashAfter != 10*time.Second {
		t.Errorf("got loadDelay=%s crashAfter=%s", cfg.loadDelay, cfg.crashAfter)
	}
}

func TestHelpIsNotAnError(t *testing.T) {
	for _, arg := range []string{"--help", "-h"} {
		if _, err := parseConfig([]string{arg}, noEnv); !errors.Is(err, errHelp) {
			t.Errorf("%s: got %v, want errHelp", arg, err)
		}
	}
}

func TestBadInputIsAnErrorNamingTheFlagOrVariable(t *testing.T) {
	cases := []struct {
		args    []string
		env     map[string]string
		message string
	}{
		{[]string{"--port", "8000"}, nil, "--model is required"},
		{[]string{"--model"}, nil, "--model needs a value"},
		{[]string{"--model", "--port", "1"}, nil, "--model needs a value"},
		{[]string{"--model", "m", "--port", "http"}, nil, `--port "http": want a TCP port number`},
		{[]string{"--model", "m", "--port", "70000"}, nil, `--port "70000"`},
		{[]string{"--model", "m", "--load-delay", "5"}, nil, `--load-delay "5": want a non-negative Go duration`},
		{[]string{"--model", "m", "--crash-after=-1s"}, nil, `--crash-after "-1s"`},
		{[]string{"--model", "m"}, map[string]string{envLoadDelay: "soon"}, `STANDIN_LOAD_DELAY "soon"`},
		{[]string{"--model", "m"}, map[string]string{envCrashAfter: "10"}, `STANDIN_CRASH_AFTER "10"`},
		{[]string{"--model", "m", "--host="}, nil, "--host must not be empty"},
	}
	for _, c := range cases {
		_, err := parseConfig(c.args, env(c.env))
		if err == nil || !strings.Contains(err.Error(), c.message) {
			t.Errorf("parseConfig(%q, %v) = %v, want an error containing %q", c.args, c.env, err, c.message)
		}
	}
}
