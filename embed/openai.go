package embed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/h4r/h4r"
)

// Defaults of the OpenAI-compatible client.
const (
	DefaultTimeout   = 500 * time.Millisecond // an embedding must not hold up a pack for long
	DefaultBatchSize = 64
	DefaultRetries   = 3
	maxResponseBytes = 64 << 20 // a batch of 64 vectors of 4096 floats is ~5 MB as JSON
	maxBatchSize     = 2048     // OpenAI's limit on inputs per request
	baseBackoff      = 50 * time.Millisecond
	maxBackoff       = 2 * time.Second
)

// OpenAI embeds texts with an OpenAI-compatible /v1/embeddings server:
// OpenAI itself, Ollama, vLLM, text-embeddings-inference. It is safe for
// concurrent use.
type OpenAI struct {
	endpoint  string // base URL + "/embeddings"
	model     string
	apiKey    string
	client    *http.Client
	timeout   time.Duration
	batchSize int
	retries   int
	backoff   func(attempt int) time.Duration
	log       *slog.Logger
	dim       atomic.Int64 // learnt from the first answer; every later answer must agree
}

// OpenAIOption configures NewOpenAI.
type OpenAIOption func(*OpenAI)

// WithAPIKey sets the key sent as "Authorization: Bearer …" (default none:
// Ollama and most self-hosted servers need none).
func WithAPIKey(key string) OpenAIOption { return func(o *OpenAI) { o.apiKey = key } }

// WithTimeout sets the deadline of one Embed call, retries included
// (default 500 ms). A query embedding later than this is not worth waiting
// for: the request goes on with full-text search.
func WithTimeout(d time.Duration) OpenAIOption { return func(o *OpenAI) { o.timeout = d } }

// WithBatchSize sets how many texts go in one request (default 64).
func WithBatchSize(n int) OpenAIOption { return func(o *OpenAI) { o.batchSize = n } }

// WithRetries sets how many times a request is retried after a 429, a 5xx
// or a transport error (default 3).
func WithRetries(n int) OpenAIOption { return func(o *OpenAI) { o.retries = n } }

// WithBackoff replaces the wait before retry number attempt (1, 2, …); the
// default is exponential from 50 ms with full jitter, capped at 2 s. A
// Retry-After header overrides it.
func WithBackoff(f func(attempt int) time.Duration) OpenAIOption {
	return func(o *OpenAI) { o.backoff = f }
}

// WithHTTPClient sets the HTTP client (default: a client of its own).
func WithHTTPClient(c *http.Client) OpenAIOption { return func(o *OpenAI) { o.client = c } }

// WithOpenAILogger sets the logger that reports retries (default slog.Default()).
func WithOpenAILogger(l *slog.Logger) OpenAIOption { return func(o *OpenAI) { o.log = l } }

// NewOpenAI returns a client of the server at baseURL (which includes the
// API version, e.g. https://api.openai.com/v1 or http://localhost:11434/v1)
// for model. Bad settings are an *h4r.Error naming the setting.
func NewOpenAI(baseURL, model string, opts ...OpenAIOption) (*OpenAI, error) {
	u, err := url.Parse(strings.TrimSpace(baseURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, h4r.Errorf(h4r.EINVALID, "url", "embeddings URL must be an http or https URL such as http://localhost:11434/v1, got %q", baseURL)
	}
	if strings.TrimSpace(model) == "" {
		return nil, h4r.Errorf(h4r.EINVALID, "model", "embedding model is required (e.g. text-embedding-3-small, nomic-embed-text)")
	}
	o := &OpenAI{
		endpoint: strings.TrimRight(u.String(), "/") + "/embeddings",
		model:    model, client: &http.Client{}, timeout: DefaultTimeout,
		batchSize: DefaultBatchSize, retries: DefaultRetries, backoff: jitterBackoff, log: slog.Default(),
	}
	for _, opt := range opts {
		opt(o)
	}
	switch {
	case o.timeout <= 0:
		return nil, h4r.Errorf(h4r.EINVALID, "timeout", "embedding timeout must be positive, got %v", o.timeout)
	case o.batchSize < 1 || o.batchSize > maxBatchSize:
		return nil, h4r.Errorf(h4r.EINVALID, "batchSize", "batch size must be between 1 and %d, got %d", maxBatchSize, o.batchSize)
	case o.retries < 0:
		return nil, h4r.Errorf(h4r.EINVALID, "retries", "retries must be >= 0, got %d", o.retries)
	case o.client == nil || o.backoff == nil || o.log == nil:
		return nil, h4r.Errorf(h4r.EINVALID, "options", "HTTP client, backoff and logger must not be nil")
	}
	return o, nil
}

// Model returns "openai:" and the model name.
func (o *OpenAI) Model() string { return "openai:" + o.model }

// Dim returns the dimension learnt from the server, or 0 before its first
// answer.
func (o *OpenAI) Dim() int { return int(o.dim.Load()) }

// Embed returns the unit vectors of texts, asking batchSize texts at a time,
// all under one deadline. Vectors are normalised here, whatever the server
// does, so that the dot product is the cosine.
func (o *OpenAI) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += o.batchSize {
		batch := texts[start:min(start+o.batchSize, len(texts))]
		vecs, err := o.embedBatch(ctx, batch)
		if err != nil {
			return nil, fmt.Errorf("embedding texts %d to %d with %s: %w", start, start+len(batch)-1, o.model, err)
		}
		out = append(out, vecs...)
	}
	return out, nil
}

// statusError is an answer other than 200.
type statusError struct {
	status     int
	message    string
	retryAfter time.Duration
}

func (e *statusError) Error() string {
	if e.message != "" {
		return fmt.Sprintf("embeddings server answered %d: %s", e.status, e.message)
	}
	return fmt.Sprintf("embeddings server answered %d", e.status)
}

// retryable: rate limits and server errors may pass; other statuses (bad
// key, unknown model, input too long) will not.
func (e *statusError) retryable() bool {
	return e.status == http.StatusTooManyRequests || e.status >= 500
}

// embedBatch sends one request, retrying what may pass on a second try
// while the deadline allows.
func (o *OpenAI) embedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	body, err := json.Marshal(embeddingRequest{Model: o.model, Input: texts, EncodingFormat: "float"})
	if err != nil {
		return nil, fmt.Errorf("encoding the request: %w", err)
	}
	for attempt := 0; ; attempt++ {
		vecs, err := o.post(ctx, body, len(texts))
		if err == nil {
			return vecs, nil
		}
		if ctx.Err() != nil || attempt >= o.retries {
			return nil, err
		}
		var se *statusError
		var de *decodeError
		switch {
		case errors.As(err, &se) && !se.retryable(), errors.As(err, &de):
			return nil, err // a malformed answer would be malformed again
		}
		wait := o.backoff(attempt + 1)
		if se != nil && se.retryAfter > 0 {
			wait = se.retryAfter
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			return nil, fmt.Errorf("%w (no time left to retry in %v)", err, wait)
		}
		o.log.DebugContext(ctx, "retrying an embedding request", "attempt", attempt+1, "wait", wait, "error", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w (then: %w)", err, ctx.Err())
		case <-t.C:
		}
	}
}

func (o *OpenAI) post(ctx context.Context, body []byte, n int) ([][]float32, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("building the request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if o.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+o.apiKey)
	}
	resp, err := o.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("calling %s: %w", o.endpoint, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the answer of %s: %w", o.endpoint, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &statusError{status: resp.StatusCode, message: errorMessage(data), retryAfter: retryAfter(resp.Header.Get("Retry-After"))}
	}
	if len(data) > maxResponseBytes {
		return nil, &decodeError{fmt.Sprintf("answer is larger than %d bytes", maxResponseBytes)}
	}
	vecs, err := DecodeResponse(data, n)
	if err != nil {
		return nil, err
	}
	dim := int64(len(vecs[0]))
	if !o.dim.CompareAndSwap(0, dim) && o.dim.Load() != dim {
		return nil, &decodeError{fmt.Sprintf("vectors have %d dimensions, earlier answers had %d", dim, o.dim.Load())}
	}
	return vecs, nil
}

// embeddingRequest is the documented request body.
type embeddingRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
}

// embeddingResponse is the documented answer: {"object": "list", "data":
// [{"object": "embedding", "index": 0, "embedding": [...]}], "model", "usage"}.
type embeddingResponse struct {
	Data []struct {
		Index     *int       `json:"index"`
		Embedding *[]float64 `json:"embedding"`
	} `json:"data"`
}

// decodeError is an answer that does not have the documented shape.
type decodeError struct{ msg string }

func (e *decodeError) Error() string { return "malformed embeddings answer: " + e.msg }

// DecodeResponse decodes the answer to a request of n texts into n unit
// vectors in input order. Each index 0…n−1 must appear once, every vector
// must have one dimension and finite values, and none may be zero.
func DecodeResponse(data []byte, n int) ([][]float32, error) {
	var r embeddingResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, &decodeError{err.Error()}
	}
	if len(r.Data) != n {
		return nil, &decodeError{fmt.Sprintf("%d embeddings for %d texts", len(r.Data), n)}
	}
	out := make([][]float32, n)
	for i, d := range r.Data {
		switch {
		case d.Index == nil:
			return nil, &decodeError{fmt.Sprintf("data[%d] has no index", i)}
		case *d.Index < 0 || *d.Index >= n:
			return nil, &decodeError{fmt.Sprintf("data[%d].index %d is out of range", i, *d.Index)}
		case out[*d.Index] != nil:
			return nil, &decodeError{fmt.Sprintf("data[%d].index %d appears twice", i, *d.Index)}
		case d.Embedding == nil || len(*d.Embedding) == 0:
			return nil, &decodeError{fmt.Sprintf("data[%d] has no embedding (base64 answers are not supported)", i)}
		case i > 0 && len(*d.Embedding) != len(*r.Data[0].Embedding):
			return nil, &decodeError{fmt.Sprintf("data[%d] has %d dimensions, data[0] has %d", i, len(*d.Embedding), len(*r.Data[0].Embedding))}
		}
		v := make([]float32, len(*d.Embedding))
		for j, x := range *d.Embedding {
			if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > math.MaxFloat32 {
				return nil, &decodeError{fmt.Sprintf("data[%d].embedding[%d] is not a finite float32", i, j)}
			}
			v[j] = float32(x)
		}
		if !normalize(v) {
			return nil, &decodeError{fmt.Sprintf("data[%d].embedding is the zero vector", i)}
		}
		out[*d.Index] = v
	}
	return out, nil
}

// errorMessage extracts {"error": {"message": …}} (OpenAI, vLLM) or
// {"error": "…"} (Ollama, TEI) from an error answer, cut short.
func errorMessage(data []byte) string {
	var withObject struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	msg := ""
	if json.Unmarshal(data, &withObject) == nil && withObject.Error.Message != "" {
		msg = withObject.Error.Message
	} else {
		var withString struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(data, &withString) == nil {
			msg = withString.Error
		}
	}
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return msg
}

// retryAfter reads a Retry-After header given in seconds (the form rate
// limiters use); a date or garbage gives 0, the default backoff.
func retryAfter(v string) time.Duration {
	s, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || s <= 0 {
		return 0
	}
	return time.Duration(s) * time.Second
}

// jitterBackoff waits a random time up to 50 ms·2^(attempt−1), at most 2 s
// ("full jitter"), so that clients retrying together spread out.
func jitterBackoff(attempt int) time.Duration {
	ceiling := min(baseBackoff<<(attempt-1), maxBackoff)
	return rand.N(ceiling) + time.Millisecond
}
