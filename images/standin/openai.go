// The OpenAI wire format the stand-in speaks, and its deterministic "model".
//
// Clients and tests written against vLLM's OpenAI server must work unchanged against the
// stand-in, so requests are validated the way vLLM does it (a bad body is a 400, an unknown
// model a 404, both with an OpenAI error object) and answers have the OpenAI shape. The text
// itself is not generated: it is the prompt's words in reverse order, so a test can predict it.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// defaultMaxTokens is what vLLM (and OpenAI's completions API) use when max_tokens is absent.
const defaultMaxTokens = 16

// apiError is an OpenAI error object: {"error": {"message", "type", "param", "code"}}.
type apiError struct {
	status  int
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func (e *apiError) Error() string { return e.Message }

// badRequest is a 400 about the request field param ("" when it is about the whole body).
func badRequest(param, format string, args ...any) *apiError {
	err := &apiError{status: 400, Message: fmt.Sprintf(format, args...), Type: "invalid_request_error"}
	if param != "" {
		err.Param = &param
	}
	return err
}

func modelNotFound(model string) *apiError {
	param, code := "model", "model_not_found"
	return &apiError{
		status:  404,
		Message: fmt.Sprintf("The model `%s` does not exist.", model),
		Type:    "invalid_request_error",
		Param:   &param,
		Code:    &code,
	}
}

// completionRequest holds the fields of POST /v1/completions the stand-in looks at; others are ignored.
type completionRequest struct {
	Model     string          `json:"model"`
	Prompt    json.RawMessage `json:"prompt"`
	MaxTokens *int            `json:"max_tokens"`
	N         *int            `json:"n"`
	Stream    bool            `json:"stream"`
	Echo      bool            `json:"echo"`
}

// chatRequest holds the fields of POST /v1/chat/completions the stand-in looks at.
type chatRequest struct {
	Model               string          `json:"model"`
	Messages            []chatMessageIn `json:"messages"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	N                   *int            `json:"n"`
	Stream              bool            `json:"stream"`
}

type chatMessageIn struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type tokenUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type completionChoice struct {
	Index        int     `json:"index"`
	Text         string  `json:"text"`
	Logprobs     *string `json:"logprobs"`
	FinishReason string  `json:"finish_reason"`
}

type completionResponse struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   tokenUsage         `json:"usage"`
}

type chatMessageOut struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatChoice struct {
	Index        int            `json:"index"`
	Message      chatMessageOut `json:"message"`
	Logprobs     *string        `json:"logprobs"`
	FinishReason string         `json:"finish_reason"`
}

type chatResponse struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   tokenUsage   `json:"usage"`
}

// answer is the stand-in's whole "model": the prompt's words reversed, at most maxTokens of them.
// A word counts as a token. finish is "length" when the answer was cut short, else "stop".
func answer(prompt string, maxTokens int) (text string, tokens int, finish string) {
	words := strings.Fields(prompt)
	slices.Reverse(words)
	finish = "stop"
	if len(words) > maxTokens {
		words, finish = words[:maxTokens], "length"
	}
	if len(words) == 0 {
		return "", 0, finish
	}
	return " " + strings.Join(words, " "), len(words), finish
}

// responseID is derived from the request, so the same request always gets the same answer.
func responseID(prefix, model string, parts ...string) string {
	h := sha256.New()
	h.Write([]byte(model))
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	return prefix + hex.EncodeToString(h.Sum(nil))[:24]
}

// maxTokens validates an optional max_tokens field.
func maxTokens(param string, v *int) (int, *apiError) {
	if v == nil {
		return defaultMaxTokens, nil
	}
	if *v < 1 {
		return 0, badRequest(param, "%s must be at least 1, got %d", param, *v)
	}
	return *v, nil
}

// unsupported rejects the options the stand-in does not implement, rather than ignoring them and
// answering something the client did not ask for.
func unsupported(n *int, stream bool) *apiError {
	if stream {
		return badRequest("stream", "stream=true is not supported by the stand-in server; send stream=false")
	}
	if n != nil && *n != 1 {
		return badRequest("n", "n=%d is not supported by the stand-in server; only n=1", *n)
	}
	return nil
}

// prompts reads "prompt": a string or a list of strings (token-id lists are refused).
func prompts(raw json.RawMessage) ([]string, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badRequest("prompt", "prompt is required: a string or a list of strings")
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, nil
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil && len(many) > 0 {
		return many, nil
	}
	return nil, badRequest("prompt", "prompt must be a string or a non-empty list of strings (token ids are not supported by the stand-in server)")
}

// content reads a chat message's content: a string, or a list of parts whose text parts are joined.
func content(index int, raw json.RawMessage) (string, *apiError) {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return text, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		texts := make([]string, 0, len(parts))
		for _, p := range parts {
			if p.Type == "text" {
				texts = append(texts, p.Text)
			}
		}
		return strings.Join(texts, " "), nil
	}
	param := fmt.Sprintf("messages[%d].content", index)
	return "", badRequest(param, "%s must be a string or a list of content parts", param)
}

// complete answers a completion request for a served model.
func complete(req completionRequest, created int64) (completionResponse, *apiError) {
	if err := unsupported(req.N, req.Stream); err != nil {
		return completionResponse{}, err
	}
	limit, err := maxTokens("max_tokens", req.MaxTokens)
	if err != nil {
		return completionResponse{}, err
	}
	all, err := prompts(req.Prompt)
	if err != nil {
		return completionResponse{}, err
	}
	resp := completionResponse{
		ID:      responseID("cmpl-", req.Model, all...),
		Object:  "text_completion",
		Created: created,
		Model:   req.Model,
		Choices: make([]completionChoice, 0, len(all)),
	}
	for i, prompt := range all {
		text, tokens, finish := answer(prompt, limit)
		if req.Echo {
			text = prompt + text
		}
		resp.Choices = append(resp.Choices, completionChoice{Index: i, Text: text, FinishReason: finish})
		resp.Usage.PromptTokens += len(strings.Fields(prompt))
		resp.Usage.CompletionTokens += tokens
	}
	resp.Usage.TotalTokens = resp.Usage.PromptTokens + resp.Usage.CompletionTokens
	return resp, nil
}

// chat answers a chat completion request: the reply is derived from the last user message.
func chat(req chatRequest, created int64) (chatResponse, *apiError) {
	if err := unsupported(req.N, req.Stream); err != nil {
		return chatResponse{}, err
	}
	limitField, limitParam := req.MaxCompletionTokens, "max_completion_tokens"
	if limitField == nil {
		limitField, limitParam = req.MaxTokens, "max_tokens"
	}
	limit, err := maxTokens(limitParam, limitField)
	if err != nil {
		return chatResponse{}, err
	}
	if len(req.Messages) == 0 {
		return chatResponse{}, badRequest("messages", "messages is required: a non-empty list of {role, content}")
	}
	var last string
	texts := make([]string, 0, len(req.Messages))
	promptTokens := 0
	for i, m := range req.Messages {
		if m.Role == "" {
			return chatResponse{}, badRequest(fmt.Sprintf("messages[%d].role", i), "messages[%d].role is required", i)
		}
		text, err := content(i, m.Content)
		if err != nil {
			return chatResponse{}, err
		}
		promptTokens += len(strings.Fields(text))
		texts = append(texts, m.Role, text)
		if m.Role == "user" {
			last = text
		}
	}
	text, tokens, finish := answer(last, limit)
	return chatResponse{
		ID:      responseID("chatcmpl-", req.Model, texts...),
		Object:  "chat.completion",
		Created: created,
		Model:   req.Model,
		Choices: []chatChoice{{
			Message:      chatMessageOut{Role: "assistant", Content: strings.TrimPrefix(text, " ")},
			FinishReason: finish,
		}},
		Usage: tokenUsage{PromptTokens: promptTokens, CompletionTokens: tokens, TotalTokens: promptTokens + tokens},
	}, nil
}
