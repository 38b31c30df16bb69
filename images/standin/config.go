// The stand-in's command line, parsed the way vLLM's OpenAI server is driven by the operator.
//
// The operator runs every inference server as `IMAGE --model NAME --port N [spec.args...]`, and the
// sample manifests pass vLLM options such as `--max-model-len 8192`. Go's flag package stops at
// the first unknown flag, so this is a small hand-written parser: it knows the flags the stand-in
// acts on, accepts (and reports) every other option, and reads its own knobs from the environment
// too (STANDIN_*), the command line winning.
package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

const (
	defaultHost      = "0.0.0.0"
	defaultPort      = 8000
	defaultLoadDelay = 2 * time.Second

	envLoadDelay  = "STANDIN_LOAD_DELAY"
	envCrashAfter = "STANDIN_CRASH_AFTER"
)

// errHelp is returned when --help or -h was given: print the usage and exit 0.
var errHelp = errors.New("help requested")

const usage = `Usage: standin --model NAME [--port 8000] [--host 0.0.0.0] [--served-model-name NAME...]
               [--load-delay 2s] [--crash-after DURATION] [any other vLLM option, ignored]

An OpenAI-compatible stand-in for vLLM's server, for tests on machines without GPUs.
It loads nothing: it answers /health with 503 for --load-delay, then 200, and completes
prompts with a deterministic text (the prompt's words in reverse order).

  --model NAME              model name served (required), as vLLM's --model
  --served-model-name NAME  name(s) clients use instead of --model, as in vLLM
  --port N                  TCP port (default 8000)
  --host ADDR               address to bind (default 0.0.0.0)
  --load-delay DURATION     pretend loading lasts this long (env STANDIN_LOAD_DELAY, default 2s)
  --crash-after DURATION    exit with code 3 this long after start, to exercise CrashLoopBackOff
                            (env STANDIN_CRASH_AFTER, default: never)
Durations are Go durations: 500ms, 2s, 1m30s. A flag wins over its environment variable.
`

// config is everything the stand-in needs to run, parsed once at startup.
type config struct {
	model       string
	servedNames []string // names accepted in requests; the first is the one /v1/models reports first
	host        string
	port        int
	loadDelay   time.Duration
	crashAfter  time.Duration // 0: never crash
	ignored     []string      // options accepted for vLLM compatibility and otherwise ignored
}

// addr is host:port for net.Listen.
func (c config) addr() string {
	if strings.Contains(c.host, ":") { // an IPv6 literal
		return fmt.Sprintf("[%s]:%d", c.host, c.port)
	}
	return fmt.Sprintf("%s:%d", c.host, c.port)
}

// isOption tells a flag from a value: "-1" and "-0.5" are values (vLLM has --seed -1).
func isOption(arg string) bool {
	if !strings.HasPrefix(arg, "-") || arg == "-" {
		return false
	}
	_, err := strconv.ParseFloat(arg, 64)
	return err != nil
}

// parseConfig reads the command line (without the program name) and the environment.
func parseConfig(args []string, getenv func(string) string) (config, error) {
	cfg := config{host: defaultHost, port: defaultPort}
	var loadDelay, crashAfter, port *string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if !isOption(arg) {
			cfg.ignored = append(cfg.ignored, arg)
			continue
		}
		name, value, hasValue := strings.Cut(arg, "=")
		// vLLM's parser accepts --max_model_len as well as --max-model-len.
		name = "--" + strings.ReplaceAll(strings.TrimLeft(name, "-"), "_", "-")
		// takeValue returns the option's value, from "--name=value" or from the next argument.
		takeValue := func() (string, error) {
			if hasValue {
				return value, nil
			}
			if i+1 < len(args) && !isOption(args[i+1]) {
				i++
				return args[i], nil
			}
			return "", fmt.Errorf("%s needs a value", name)
		}
		var err error
		switch name {
		case "--help", "--h":
			return config{}, errHelp
		case "--model":
			cfg.model, err = takeValue()
		case "--host":
			cfg.host, err = takeValue()
		case "--port":
			var v string
			v, err = takeValue()
			port = &v
		case "--load-delay":
			var v string
			v, err = takeValue()
			loadDelay = &v
		case "--crash-after":
			var v string
			v, err = takeValue()
			crashAfter = &v
		case "--served-model-name":
			// vLLM takes one or more names here (nargs="+").
			var v string
			if v, err = takeValue(); err == nil {
				cfg.servedNames = append(cfg.servedNames, v)
				for !hasValue && i+1 < len(args) && !isOption(args[i+1]) {
					i++
					cfg.servedNames = append(cfg.servedNames, args[i])
				}
			}
		default:
			// An unknown vLLM option: keep it with its value (if the next argument is one) for the log.
			ignored := arg
			if !hasValue && i+1 < len(args) && !isOption(args[i+1]) {
				i++
				ignored += " " + args[i]
			}
			cfg.ignored = append(cfg.ignored, ignored)
		}
		if err != nil {
			return config{}, err
		}
	}

	if cfg.model == "" {
		return config{}, errors.New("--model is required (the operator passes spec.model as --model)")
	}
	if len(cfg.servedNames) == 0 {
		cfg.servedNames = []string{cfg.model}
	}
	if cfg.host == "" {
		return config{}, errors.New("--host must not be empty")
	}
	if port != nil {
		p, err := strconv.Atoi(*port)
		if err != nil || p < 0 || p > 65535 {
			return config{}, fmt.Errorf("--port %q: want a TCP port number, 0 to 65535", *port)
		}
		cfg.port = p
	}
	var err error
	if cfg.loadDelay, err = duration("--load-delay", loadDelay, envLoadDelay, getenv, defaultLoadDelay); err != nil {
		return config{}, err
	}
	if cfg.crashAfter, err = duration("--crash-after", crashAfter, envCrashAfter, getenv, 0); err != nil {
		return config{}, err
	}
	return cfg, nil
}

// duration is the flag's value if given, else the environment variable's if set, else the default.
func duration(flagName string, flagValue *string, envName string, getenv func(string) string, fallback time.Duration) (time.Duration, error) {
	source, raw := flagName, ""
	switch {
	case flagValue != nil:
		raw = *flagValue
	case getenv(envName) != "":
		source, raw = envName, getenv(envName)
	default:
		return fallback, nil
	}
	d, err := time.ParseDuration(raw)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s %q: want a non-negative Go duration such as 500ms, 2s or 1m30s", source, raw)
	}
	return d, nil
}
