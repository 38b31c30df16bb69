// The stand-in's HTTP endpoints: what the kubelet's probes, the load balancer and e2e tests call.
//
// Loading is pretended: for --load-delay after start, /health and every /v1/ endpoint answer 503,
// exactly what the operator's startup and readiness probes must wait out on a real vLLM server.
// Whether the model is loaded is read from the clock at each request, never stored, so tests
// decide it by moving a fake clock.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// maxBodyBytes bounds a request body; prompts for a stand-in are short.
const maxBodyBytes = 1 << 20

// server answers HTTP requests for one pretend model.
type server struct {
	cfg     config
	clock   clock
	started time.Time
	log     *slog.Logger

	mu       sync.Mutex
	requests map[requestKey]int // for /metrics
}

type requestKey struct {
	endpoint string
	code     int
}

func newServer(cfg config, clk clock, log *slog.Logger) *server {
	return &server{cfg: cfg, clock: clk, started: clk.Now(), log: log, requests: map[requestKey]int{}}
}

// loading reports whether the pretend load is still going on, and for how much longer.
func (s *server) loading() (bool, time.Duration) {
	left := s.cfg.loadDelay - s.clock.Now().Sub(s.started)
	return left > 0, left
}

// handler routes requests; every answer is logged (except healthy probes and scrapes) and counted.
func (s *server) handler() http.Handler {
	routes := map[string]struct {
		method string
		handle func(http.ResponseWriter, *http.Request)
	}{
		"/health":              {http.MethodGet, s.health},
		"/metrics":             {http.MethodGet, s.metrics},
		"/v1/models":           {http.MethodGet, s.whenLoaded(s.models)},
		"/v1/completions":      {http.MethodPost, s.whenLoaded(s.completions)},
		"/v1/chat/completions": {http.MethodPost, s.whenLoaded(s.chatCompletions)},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		start := s.clock.Now()
		endpoint := "other"
		route, known := routes[r.URL.Path]
		switch {
		case !known:
			writeError(rec, &apiError{
				status: http.StatusNotFound,
				Message: fmt.Sprintf("No such endpoint: %s %s. The stand-in serves /health, /metrics, "+
					"/v1/models, /v1/completions and /v1/chat/completions.", r.Method, r.URL.Path),
				Type: "not_found_error",
			})
		case r.Method != route.method && !(route.method == http.MethodGet && r.Method == http.MethodHead):
			endpoint = r.URL.Path
			allowed := route.method
			if allowed == http.MethodGet {
				allowed = "GET, HEAD"
			}
			rec.Header().Set("Allow", allowed)
			writeError(rec, &apiError{
				status:  http.StatusMethodNotAllowed,
				Message: fmt.Sprintf("%s %s is not allowed; use %s.", r.Method, r.URL.Path, route.method),
				Type:    "invalid_request_error",
			})
		default:
			endpoint = r.URL.Path
			route.handle(rec, r)
		}
		s.count(endpoint, rec.status)
		quiet := (endpoint == "/health" || endpoint == "/metrics") && rec.status == http.StatusOK
		if !quiet {
			attrs := []any{"method", r.Method, "path", r.URL.Path, "status", rec.status,
				"duration", s.clock.Now().Sub(start), "remote", r.RemoteAddr}
			if rec.problem != "" {
				attrs = append(attrs, "error", rec.problem)
			}
			s.log.Info("Answered request", attrs...)
		}
	})
}

func (s *server) count(endpoint string, code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests[requestKey{endpoint, code}]++
}

// health is what the operator's startup and readiness probes call (spec.healthPath, /health by default).
func (s *server) health(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if busy, left := s.loading(); busy {
		w.Header().Set("Retry-After", retryAfter(left))
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "loading model %s: ready in %s\n", s.cfg.model, left.Round(time.Millisecond))
		return
	}
	fmt.Fprintln(w, "ok")
}

// whenLoaded answers 503 while the pretend load is going on, as a real server that is not up yet.
func (s *server) whenLoaded(next func(http.ResponseWriter, *http.Request)) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		if busy, left := s.loading(); busy {
			w.Header().Set("Retry-After", retryAfter(left))
			writeError(w, &apiError{
				status:  http.StatusServiceUnavailable,
				Message: fmt.Sprintf("The model `%s` is still loading; ready in %s. Retry later.", s.cfg.model, left.Round(time.Millisecond)),
				Type:    "service_unavailable",
			})
			return
		}
		next(w, r)
	}
}

type modelCard struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
	Root    string `json:"root"`
}

func (s *server) models(w http.ResponseWriter, _ *http.Request) {
	cards := make([]modelCard, 0, len(s.cfg.servedNames))
	for _, name := range s.cfg.servedNames {
		cards = append(cards, modelCard{ID: name, Object: "model", Created: s.started.Unix(), OwnedBy: "standin", Root: s.cfg.model})
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": cards})
}

func (s *server) completions(w http.ResponseWriter, r *http.Request) {
	var req completionRequest
	if err := s.decode(w, r, &req, &req.Model); err != nil {
		writeError(w, err)
		return
	}
	resp, err := complete(req, s.clock.Now().Unix())
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if err := s.decode(w, r, &req, &req.Model); err != nil {
		writeError(w, err)
		return
	}
	resp, err := chat(req, s.clock.Now().Unix())
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// decode reads a JSON request body into req and checks that *model names a served model.
func (s *server) decode(w http.ResponseWriter, r *http.Request, req any, model *string) *apiError {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return badRequest("", "request body is larger than %d bytes", maxBodyBytes)
		}
		return badRequest("", "could not read the request body: %v", err)
	}
	if err := json.Unmarshal(body, req); err != nil {
		var typ *json.UnmarshalTypeError
		if errors.As(err, &typ) && typ.Field != "" {
			return badRequest(typ.Field, "%s must be a %s, not a JSON %s", typ.Field, jsonKind(typ.Type.Kind().String()), typ.Value)
		}
		return badRequest("", "request body must be a JSON object: %v", err)
	}
	if *model == "" {
		return badRequest("model", "model is required; this server serves %s", strings.Join(s.cfg.servedNames, ", "))
	}
	if !slices.Contains(s.cfg.servedNames, *model) {
		return modelNotFound(*model)
	}
	return nil
}

// jsonKind names a Go kind the way a JSON user would.
func jsonKind(kind string) string {
	switch {
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"), strings.HasPrefix(kind, "float"):
		return "number"
	case kind == "bool":
		return "boolean"
	case kind == "slice":
		return "list"
	case kind == "struct", kind == "map":
		return "object"
	default:
		return kind
	}
}

// metrics is a small Prometheus text exposition: whether the model is loaded, and requests by endpoint.
func (s *server) metrics(w http.ResponseWriter, _ *http.Request) {
	ready := 1
	if busy, _ := s.loading(); busy {
		ready = 0
	}
	s.mu.Lock()
	keys := make([]requestKey, 0, len(s.requests))
	for k := range s.requests {
		keys = append(keys, k)
	}
	counts := make(map[requestKey]int, len(s.requests))
	for k, v := range s.requests {
		counts[k] = v
	}
	s.mu.Unlock()
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].endpoint != keys[j].endpoint {
			return keys[i].endpoint < keys[j].endpoint
		}
		return keys[i].code < keys[j].code
	})
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	fmt.Fprintln(w, "# HELP standin_ready 1 once the pretend model load is over, else 0.")
	fmt.Fprintln(w, "# TYPE standin_ready gauge")
	fmt.Fprintf(w, "standin_ready %d\n", ready)
	fmt.Fprintln(w, "# HELP standin_requests_total HTTP requests answered, by endpoint and status code.")
	fmt.Fprintln(w, "# TYPE standin_requests_total counter")
	for _, k := range keys {
		fmt.Fprintf(w, "standin_requests_total{endpoint=%q,code=\"%d\"} %d\n", k.endpoint, k.code, counts[k])
	}
}

// retryAfter is a Retry-After header value: whole seconds, rounded up, at least 1.
func retryAfter(left time.Duration) string {
	return fmt.Sprint(max(1, int(math.Ceil(left.Seconds()))))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client went away; nothing to do
}

func writeError(w http.ResponseWriter, err *apiError) {
	if rec, ok := w.(*statusRecorder); ok {
		rec.problem = err.Message
	}
	writeJSON(w, err.status, map[string]*apiError{"error": err})
}

// statusRecorder remembers the status code a handler wrote, for the log line and the metrics,
// and the error message it sent, for the log line.
type statusRecorder struct {
	http.ResponseWriter
	status  int
	problem string
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}
