// Tests of the HTTP endpoints, served in memory (httptest.NewRecorder, no socket) on a fake clock:
// the pretend load (503 then 200), /v1/models, completions and chat completions with their
// deterministic answers, OpenAI error bodies for bad requests, 404/405, /metrics, and the log.
package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a log sink that handlers may write to from several goroutines.
type syncBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	written chan struct{} // gets a token after a write, for waitFor
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.written == nil {
		b.written = make(chan struct{}, 1)
	}
	select {
	case b.written <- struct{}{}:
	default:
	}
	return b.buf.Write(p)
}

// waitFor returns once the buffer contains text, woken by writes; it fails after bound.
func (b *syncBuffer) waitFor(t *testing.T, text string) {
	t.Helper()
	b.mu.Lock()
	if b.written == nil {
		b.written = make(chan struct{}, 1)
	}
	written := b.written
	b.mu.Unlock()
	timeout := time.After(bound)
	for !strings.Contains(b.String(), text) {
		select {
		case <-written:
		case <-timeout:
			t.Fatalf("waited %s for %q in:\n%s", bound, text, b)
		}
	}
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type fixture struct {
	clock   *fakeClock
	log     *syncBuffer
	handler http.Handler
}

// loaded is a stand-in for model "m" whose 2s load is over.
func loaded(t *testing.T, args ...string) fixture {
	t.Helper()
	f := starting(t, args...)
	f.clock.Advance(2 * time.Second)
	return f
}

// starting is a stand-in for model "m" that has just started its 2s load.
func starting(t *testing.T, args ...string) fixture {
	t.Helper()
	cfg := mustParse(t, noEnv, append([]string{"--model", "m", "--load-delay", "2s"}, args...)...)
	clk, log := newFakeClock(), &syncBuffer{}
	srv := newServer(cfg, clk, slog.New(slog.NewTextHandler(log, nil)))
	return fixture{clock: clk, log: log, handler: srv.handler()}
}

func (f fixture) do(method, path, body string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	f.handler.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
	return rec
}

func decodeJSON[T any](t *testing.T, rec *httptest.ResponseRecorder) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatalf("body is not JSON: %v: %s", err, rec.Body)
	}
	return v
}

type errorBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

func TestHealthIs503DuringTheLoadDelayThen200(t *testing.T) {
	f := starting(t)
	rec := f.do("GET", "/health", "")
	if rec.Code != 503 || rec.Header().Get("Retry-After") != "2" || !strings.Contains(rec.Body.String(), "loading model m: ready in 2s") {
		t.Fatalf("at start: %d Retry-After=%q %q", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	f.clock.Advance(1999 * time.Millisecond)
	if rec := f.do("GET", "/health", ""); rec.Code != 503 {
		t.Fatalf("1ms before the end of the load: %d", rec.Code)
	}
	f.clock.Advance(time.Millisecond)
	if rec := f.do("GET", "/health", ""); rec.Code != 200 || rec.Body.String() != "ok\n" {
		t.Fatalf("after the load: %d %q", rec.Code, rec.Body)
	}
}

func TestAZeroLoadDelayIsHealthyAtOnce(t *testing.T) {
	f := starting(t, "--load-delay", "0s")
	if rec := f.do("GET", "/health", ""); rec.Code != 200 {
		t.Fatalf("got %d", rec.Code)
	}
}

func TestTheOpenAIEndpointsAre503WhileLoading(t *testing.T) {
	f := starting(t)
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/v1/models", ""},
		{"POST", "/v1/completions", `{"model": "m", "prompt": "hi"}`},
		{"POST", "/v1/chat/completions", `{"model": "m", "messages": [{"role": "user", "content": "hi"}]}`},
	} {
		rec := f.do(r.method, r.path, r.body)
		body := decodeJSON[errorBody](t, rec)
		if rec.Code != 503 || body.Error.Type != "service_unavailable" || !strings.Contains(body.Error.Message, "The model `m` is still loading; ready in 2s") {
			t.Errorf("%s %s: %d %s", r.method, r.path, rec.Code, rec.Body)
		}
	}
}

func TestModelsListsTheServedModelInOpenAIFormat(t *testing.T) {
	f := loaded(t, "--served-model-name", "a", "b")
	rec := f.do("GET", "/v1/models", "")
	got := decodeJSON[struct {
		Object string      `json:"object"`
		Data   []modelCard `json:"data"`
	}](t, rec)
	if rec.Code != 200 || got.Object != "list" || len(got.Data) != 2 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	for i, name := range []string{"a", "b"} {
		if card := got.Data[i]; card.ID != name || card.Object != "model" || card.Root != "m" || card.OwnedBy != "standin" {
			t.Errorf("data[%d] = %+v", i, card)
		}
	}
}

func TestACompletionIsThePromptsWordsReversed(t *testing.T) {
	f := loaded(t)
	rec := f.do("POST", "/v1/completions", `{"model": "m", "prompt": "the quick brown fox", "temperature": 0.7}`)
	got := decodeJSON[completionResponse](t, rec)
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if got.Object != "text_completion" || got.Model != "m" || !strings.HasPrefix(got.ID, "cmpl-") || got.Created != f.clock.Now().Unix() {
		t.Errorf("envelope: %+v", got)
	}
	if len(got.Choices) != 1 || got.Choices[0].Text != " fox brown quick the" || got.Choices[0].FinishReason != "stop" {
		t.Errorf("choices: %+v", got.Choices)
	}
	if got.Usage != (tokenUsage{PromptTokens: 4, CompletionTokens: 4, TotalTokens: 8}) {
		t.Errorf("usage: %+v", got.Usage)
	}
	again := decodeJSON[completionResponse](t, f.do("POST", "/v1/completions", `{"model": "m", "prompt": "the quick brown fox"}`))
	if again.ID != got.ID || again.Choices[0].Text != got.Choices[0].Text {
		t.Errorf("the same request got a different answer: %+v vs %+v", again, got)
	}
}

func TestACompletionStopsAtMaxTokens(t *testing.T) {
	f := loaded(t)
	got := decodeJSON[completionResponse](t, f.do("POST", "/v1/completions", `{"model": "m", "prompt": "a b c d", "max_tokens": 2}`))
	if got.Choices[0].Text != " d c" || got.Choices[0].FinishReason != "length" || got.Usage.CompletionTokens != 2 {
		t.Errorf("%+v", got)
	}
	long := strings.Repeat("w ", 40)
	got = decodeJSON[completionResponse](t, f.do("POST", "/v1/completions", `{"model": "m", "prompt": "`+long+`"}`))
	if got.Usage.CompletionTokens != defaultMaxTokens || got.Choices[0].FinishReason != "length" {
		t.Errorf("without max_tokens: %+v", got)
	}
}

func TestAListOfPromptsGetsOneChoiceEachAndEchoPrependsThePrompt(t *testing.T) {
	f := loaded(t)
	got := decodeJSON[completionResponse](t, f.do("POST", "/v1/completions", `{"model": "m", "prompt": ["one two", "three"], "echo": true}`))
	if len(got.Choices) != 2 || got.Choices[0].Text != "one two two one" || got.Choices[1].Index != 1 || got.Choices[1].Text != "three three" {
		t.Errorf("%+v", got.Choices)
	}
}

func TestAChatCompletionAnswersTheLastUserMessage(t *testing.T) {
	f := loaded(t)
	rec := f.do("POST", "/v1/chat/completions", `{"model": "m", "messages": [
		{"role": "system", "content": "be brief"},
		{"role": "user", "content": "first question"},
		{"role": "assistant", "content": "question first"},
		{"role": "user", "content": [{"type": "text", "text": "hello"}, {"type": "text", "text": "there"}]}]}`)
	got := decodeJSON[chatResponse](t, rec)
	if rec.Code != 200 || got.Object != "chat.completion" || got.Model != "m" || !strings.HasPrefix(got.ID, "chatcmpl-") {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if len(got.Choices) != 1 || got.Choices[0].Message != (chatMessageOut{Role: "assistant", Content: "there hello"}) || got.Choices[0].FinishReason != "stop" {
		t.Errorf("choices: %+v", got.Choices)
	}
	if got.Usage != (tokenUsage{PromptTokens: 8, CompletionTokens: 2, TotalTokens: 10}) {
		t.Errorf("usage: %+v", got.Usage)
	}
	got = decodeJSON[chatResponse](t, f.do("POST", "/v1/chat/completions", `{"model": "m", "max_completion_tokens": 1, "messages": [{"role": "user", "content": "a b"}]}`))
	if got.Choices[0].Message.Content != "b" || got.Choices[0].FinishReason != "length" {
		t.Errorf("max_completion_tokens: %+v", got.Choices)
	}
}

func TestBadRequestsGetOpenAIErrorBodies(t *testing.T) {
	f := loaded(t)
	cases := []struct {
		path, body string
		status     int
		param      string // "" for null
		message    string
	}{
		{"/v1/completions", `{"model": "m", "prompt": `, 400, "", "request body must be a JSON object"},
		{"/v1/completions", ``, 400, "", "request body must be a JSON object"},
		{"/v1/completions", `["m"]`, 400, "", "request body must be a JSON object"},
		{"/v1/completions", `{"prompt": "hi"}`, 400, "model", "model is required; this server serves m"},
		{"/v1/completions", `{"model": 7, "prompt": "hi"}`, 400, "model", "model must be a string, not a JSON number"},
		{"/v1/completions", `{"model": "gpt-4", "prompt": "hi"}`, 404, "model", "The model `gpt-4` does not exist."},
		{"/v1/completions", `{"model": "m"}`, 400, "prompt", "prompt is required"},
		{"/v1/completions", `{"model": "m", "prompt": [1, 2]}`, 400, "prompt", "token ids are not supported"},
		{"/v1/completions", `{"model": "m", "prompt": "hi", "max_tokens": 0}`, 400, "max_tokens", "max_tokens must be at least 1, got 0"},
		{"/v1/completions", `{"model": "m", "prompt": "hi", "max_tokens": "3"}`, 400, "max_tokens", "max_tokens must be a number, not a JSON string"},
		{"/v1/completions", `{"model": "m", "prompt": "hi", "stream": true}`, 400, "stream", "stream=true is not supported"},
		{"/v1/completions", `{"model": "m", "prompt": "hi", "n": 2}`, 400, "n", "n=2 is not supported"},
		{"/v1/chat/completions", `{"model": "m"}`, 400, "messages", "messages is required"},
		{"/v1/chat/completions", `{"model": "m", "messages": [{"content": "hi"}]}`, 400, "messages[0].role", "messages[0].role is required"},
		{"/v1/chat/completions", `{"model": "m", "messages": [{"role": "user", "content": 5}]}`, 400, "messages[0].content", "must be a string or a list of content parts"},
		{"/v1/chat/completions", `{"model": "nope", "messages": [{"role": "user", "content": "hi"}]}`, 404, "model", "The model `nope` does not exist."},
	}
	for _, c := range cases {
		rec := f.do("POST", c.path, c.body)
		got := decodeJSON[errorBody](t, rec)
		param := ""
		if got.Error.Param != nil {
			param = *got.Error.Param
		}
		if rec.Code != c.status || param != c.param || got.Error.Type != "invalid_request_error" || !strings.Contains(got.Error.Message, c.message) {
			t.Errorf("POST %s %s: got %d %s, want %d param=%q message containing %q", c.path, c.body, rec.Code, rec.Body, c.status, c.param, c.message)
		}
	}
	if got := decodeJSON[errorBody](t, f.do("POST", "/v1/completions", `{"model": "x", "prompt": "hi"}`)); got.Error.Code == nil || *got.Error.Code != "model_not_found" {
		t.Errorf("an unknown model's code: %+v", got.Error)
	}
}

func TestATooLargeBodyIsRefused(t *testing.T) {
	f := loaded(t)
	rec := f.do("POST", "/v1/completions", `{"model": "m", "prompt": "`+strings.Repeat("x", maxBodyBytes)+`"}`)
	if got := decodeJSON[errorBody](t, rec); rec.Code != 400 || !strings.Contains(got.Error.Message, "larger than") {
		t.Errorf("%d %+v", rec.Code, got)
	}
}

func TestUnknownPathsAre404AndWrongMethods405(t *testing.T) {
	f := loaded(t)
	rec := f.do("GET", "/v1/embeddings", "")
	if got := decodeJSON[errorBody](t, rec); rec.Code != 404 || !strings.Contains(got.Error.Message, "No such endpoint: GET /v1/embeddings") {
		t.Errorf("unknown path: %d %s", rec.Code, rec.Body)
	}
	rec = f.do("GET", "/v1/completions", "")
	if rec.Code != 405 || rec.Header().Get("Allow") != "POST" {
		t.Errorf("GET /v1/completions: %d Allow=%q", rec.Code, rec.Header().Get("Allow"))
	}
	if rec := f.do("POST", "/health", ""); rec.Code != 405 || rec.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /health: %d", rec.Code)
	}
	if rec := f.do("HEAD", "/health", ""); rec.Code != 200 {
		t.Errorf("HEAD /health: %d", rec.Code)
	}
}

func TestMetricsShowReadinessAndRequestsByEndpointAndCode(t *testing.T) {
	f := starting(t)
	f.do("GET", "/health", "")
	if body := f.do("GET", "/metrics", "").Body.String(); !strings.Contains(body, "standin_ready 0\n") {
		t.Errorf("while loading:\n%s", body)
	}
	f.clock.Advance(2 * time.Second)
	f.do("GET", "/health", "")
	f.do("POST", "/v1/completions", `{"model": "m", "prompt": "hi"}`)
	f.do("GET", "/nowhere", "")
	rec := f.do("GET", "/metrics", "")
	for _, line := range []string{
		"standin_ready 1\n",
		`standin_requests_total{endpoint="/health",code="503"} 1` + "\n",
		`standin_requests_total{endpoint="/health",code="200"} 1` + "\n",
		`standin_requests_total{endpoint="/v1/completions",code="200"} 1` + "\n",
		`standin_requests_total{endpoint="other",code="404"} 1` + "\n",
		`standin_requests_total{endpoint="/metrics",code="200"} 1` + "\n",
	} {
		if !strings.Contains(rec.Body.String(), line) {
			t.Errorf("missing %q in:\n%s", line, rec.Body)
		}
	}
}

func TestRequestsAreLoggedWithTheirErrorButHealthyProbesAreNot(t *testing.T) {
	f := starting(t)
	f.do("GET", "/health", "")
	f.clock.Advance(2 * time.Second)
	f.do("GET", "/health", "")
	f.do("POST", "/v1/completions", `{"model": "gpt-4", "prompt": "hi"}`)
	lines := strings.Split(strings.TrimSpace(f.log.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 log lines (the 503 probe and the 404), got:\n%s", f.log)
	}
	if !strings.Contains(lines[0], `msg="Answered request" method=GET path=/health status=503`) {
		t.Errorf("probe line: %s", lines[0])
	}
	if !strings.Contains(lines[1], "status=404") || !strings.Contains(lines[1], "error=\"The model `gpt-4` does not exist.\"") {
		t.Errorf("error line: %s", lines[1])
	}
}
