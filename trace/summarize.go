package trace

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Summarizer writes a trace's summary when the publisher gave none.
type Summarizer interface {
	Summarize(ctx context.Context, t *CommitTrace) (string, error)
}

// FallbackSummary is the document's summary from structured data: the
// areas, the number of decisions and the line counts. A trace with none of
// them is summarized by its commit, so that the item always has text.
func FallbackSummary(t *CommitTrace) string {
	var parts []string
	if len(t.Areas) > 0 {
		parts = append(parts, fmt.Sprintf("Changes to %s", strings.Join(t.Areas, ", ")))
	}
	if len(t.Decisions) > 0 {
		parts = append(parts, fmt.Sprintf("%d decisions made", len(t.Decisions)))
	}
	if t.Stats.Insertions > 0 || t.Stats.Deletions > 0 {
		parts = append(parts, fmt.Sprintf("+%d/-%d lines", t.Stats.Insertions, t.Stats.Deletions))
	}
	if len(parts) == 0 {
		return fmt.Sprintf("Commit %s in %s", t.SHA, t.Repo)
	}
	return strings.Join(parts, ". ")
}

// ChatSummarizer asks an OpenAI-compatible chat completions endpoint
// (OpenAI, Ollama, vLLM) for a summary.
type ChatSummarizer struct {
	url    string // base URL, e.g. http://localhost:11434/v1
	model  string
	apiKey string
	client *http.Client
}

// NewChatSummarizer returns a summarizer over baseURL/chat/completions;
// each call has its own timeout.
func NewChatSummarizer(baseURL, model, apiKey string, timeout time.Duration) *ChatSummarizer {
	return &ChatSummarizer{url: strings.TrimRight(baseURL, "/"), model: model, apiKey: apiKey, client: &http.Client{Timeout: timeout}}
}

// maxPromptDecisions bounds what the prompt says of a trace, so that a
// large trace does not make a large prompt.
const maxPromptDecisions = 10

// Summarize asks for a two-sentence summary of the trace's intent and
// decisions.
func (s *ChatSummarizer) Summarize(ctx context.Context, t *CommitTrace) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "Repository %s, branch %s, commit %s.\n", t.Repo, t.Branch, t.SHA)
	if len(t.Areas) > 0 {
		fmt.Fprintf(&b, "Areas: %s.\n", strings.Join(t.Areas, ", "))
	}
	fmt.Fprintf(&b, "Lines: +%d/-%d in %d files.\n", t.Stats.Insertions, t.Stats.Deletions, t.Stats.Files)
	for i, d := range t.Decisions {
		if i == maxPromptDecisions {
			break
		}
		fmt.Fprintf(&b, "Decision: %s\n", decisionText(d))
	}
	for i, e := range t.Errors {
		if i == maxPromptDecisions {
			break
		}
		fmt.Fprintf(&b, "Error: %s; recovery: %s\n", e.Message, e.Recovery)
	}
	body, err := json.Marshal(map[string]any{
		"model": s.model,
		"messages": []map[string]string{
			{"role": "system", "content": "Summarize this commit trace in at most two sentences: what changed, and the key decisions and why. Plain text."},
			{"role": "user", "content": b.String()},
		},
		"max_tokens":  500,
		"temperature": 0,
	})
	if err != nil {
		return "", fmt.Errorf("encoding the summary request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("building the summary request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if s.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+s.apiKey)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("asking %s for a summary: %w", s.url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("reading the summary answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("the summary endpoint answered %s: %.200s", resp.Status, raw)
	}
	var out struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return "", fmt.Errorf("decoding the summary answer: %w", err)
	}
	if len(out.Choices) == 0 || strings.TrimSpace(out.Choices[0].Message.Content) == "" {
		return "", fmt.Errorf("the summary endpoint answered no text")
	}
	return strings.TrimSpace(out.Choices[0].Message.Content), nil
}
