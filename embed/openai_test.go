package embed_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/embed"
)

// embeddingsServer speaks the documented OpenAI /v1/embeddings wire format.
// Each request takes the next scripted reply; when the script is used up it
// answers properly, with vectors from a small Hash (so that they are
// deterministic and distinct per text), data in reverse order (clients must
// order by index).
type embeddingsServer struct {
	t      *testing.T
	hash   *embed.Hash
	mu     sync.Mutex
	script []reply
	calls  []embeddingCall
}

type embeddingCall struct {
	auth  string
	model string
	input []string
}

// reply is one scripted answer: a status with a body, or a hang until the
// client gives up.
type reply struct {
	status     int
	body       string
	retryAfter string
	hang       bool
}

func newEmbeddingsServer(t *testing.T, script ...reply) (*embeddingsServer, string) {
	s := &embeddingsServer{t: t, hash: newHash(t, embed.WithHashDim(16)), script: script}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	return s, srv.URL + "/v1"
}

func (s *embeddingsServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" || r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, `{"error":{"message":"wrong method, path or content type"}}`, http.StatusNotFound)
		return
	}
	var req struct {
		Model          string   `json:"model"`
		Input          []string `json:"input"`
		EncodingFormat string   `json:"encoding_format"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.EncodingFormat != "float" {
		http.Error(w, `{"error":{"message":"bad request body"}}`, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.calls = append(s.calls, embeddingCall{auth: r.Header.Get("Authorization"), model: req.Model, input: req.Input})
	var next *reply
	if len(s.script) > 0 {
		next = &s.script[0]
		s.script = s.script[1:]
	}
	s.mu.Unlock()
	if next != nil {
		if next.hang {
			<-r.Context().Done()
			return
		}
		if next.retryAfter != "" {
			w.Header().Set("Retry-After", next.retryAfter)
		}
		w.WriteHeader(next.status)
		fmt.Fprint(w, next.body)
		return
	}
	type datum struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	resp := struct {
		Object string         `json:"object"`
		Data   []datum        `json:"data"`
		Model  string         `json:"model"`
		Usage  map[string]int `json:"usage"`
	}{Object: "list", Model: req.Model, Usage: map[string]int{"prompt_tokens": 1, "total_tokens": 1}}
	for i := len(req.Input) - 1; i >= 0; i-- {
		v := s.hash.Vector(req.Input[i])
		for j := range v {
			v[j] *= 3 // not unit length: the client normalises
		}
		resp.Data = append(resp.Data, datum{Object: "embedding", Index: i, Embedding: v})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(resp)
}

func (s *embeddingsServer) callCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls)
}

func newClient(t *testing.T, url string, opts ...embed.OpenAIOption) *embed.OpenAI {
	t.Helper()
	noWait := embed.WithBackoff(func(int) time.Duration { return 0 })
	c, err := embed.NewOpenAI(url, "nomic-embed-text", append([]embed.OpenAIOption{noWait, embed.WithTimeout(time.Minute)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestOpenAIEmbeds(t *testing.T) {
	srv, url := newEmbeddingsServer(t)
	c := newClient(t, url, embed.WithAPIKey("sk-test"), embed.WithBatchSize(2))
	texts := []string{"login failed", "checkout slow", "cache miss", "login failed"}
	vecs, err := c.Embed(t.Context(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != len(texts) {
		t.Fatalf("%d vectors for %d texts", len(vecs), len(texts))
	}
	for i, text := range texts {
		if want := srv.hash.Vector(text); embed.Cosine(vecs[i], want) < 0.9999 || norm(vecs[i]) < 0.9999 || norm(vecs[i]) > 1.0001 {
			t.Errorf("vector %d is not the unit vector of %q", i, text)
		}
	}
	if srv.callCount() != 2 {
		t.Errorf("%d requests, want 2 batches of 2", srv.callCount())
	}
	for _, call := range srv.calls {
		if call.auth != "Bearer sk-test" || call.model != "nomic-embed-text" || len(call.input) != 2 {
			t.Errorf("request %+v: want bearer key, model and 2 inputs", call)
		}
	}
	if c.Dim() != 16 || c.Model() != "openai:nomic-embed-text" {
		t.Errorf("Dim, Model = %d, %s", c.Dim(), c.Model())
	}
	if d, err := embed.Dimension(t.Context(), c); d != 16 || err != nil {
		t.Errorf("Dimension = %d, %v", d, err)
	}
}

func TestOpenAIRetriesAndFailures(t *testing.T) {
	for _, tc := range []struct {
		name      string
		script    []reply
		retries   int
		wantErr   string // "" for success
		wantCalls int
	}{
		{name: "429 then success", script: []reply{{status: 429, body: `{"error":{"message":"slow down"}}`}}, retries: 3, wantCalls: 2},
		{name: "500 and 503 then success", script: []reply{{status: 500}, {status: 503, body: `{"error":"loading model"}`}}, retries: 3, wantCalls: 3},
		{name: "retries run out", script: []reply{{status: 502}, {status: 502}, {status: 502}}, retries: 2, wantErr: "answered 502", wantCalls: 3},
		{name: "400 is not retried", script: []reply{{status: 400, body: `{"error":{"message":"input too long"}}`}}, retries: 3, wantErr: "input too long", wantCalls: 1},
		{name: "401 is not retried", script: []reply{{status: 401, body: `{"error":"bad key"}`}}, retries: 3, wantErr: "answered 401: bad key", wantCalls: 1},
		{name: "malformed JSON is not retried", script: []reply{{status: 200, body: `{"data": [`}}, retries: 3, wantErr: "malformed embeddings answer", wantCalls: 1},
		{name: "wrong count", script: []reply{{status: 200, body: `{"data": []}`}}, retries: 3, wantErr: "0 embeddings for 1 texts", wantCalls: 1},
		{name: "Retry-After beyond the deadline gives up", script: []reply{{status: 429, retryAfter: "3600"}}, retries: 3, wantErr: "no time left to retry", wantCalls: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, url := newEmbeddingsServer(t, tc.script...)
			c := newClient(t, url, embed.WithRetries(tc.retries))
			vecs, err := c.Embed(t.Context(), []string{"flaky selector"})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Embed: %v", err)
			case tc.wantErr == "" && len(vecs) != 1:
				t.Fatalf("%d vectors", len(vecs))
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
			}
			if srv.callCount() != tc.wantCalls {
				t.Errorf("%d requests, want %d", srv.callCount(), tc.wantCalls)
			}
		})
	}
}

// A server that does not answer in time: the call fails with the deadline,
// however long the server would have taken.
func TestOpenAISlowServer(t *testing.T) {
	_, url := newEmbeddingsServer(t, reply{hang: true}, reply{hang: true}, reply{hang: true}, reply{hang: true})
	c, err := embed.NewOpenAI(url, "m", embed.WithTimeout(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Embed(t.Context(), []string{"x"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a deadline error", err)
	}
}

func TestNewOpenAIRejects(t *testing.T) {
	for _, tc := range []struct {
		name, url, model string
		opt              embed.OpenAIOption
		field            string
	}{
		{"no URL", "", "m", nil, "url"},
		{"not http", "ftp://host/v1", "m", nil, "url"},
		{"no host", "http:///v1", "m", nil, "url"},
		{"no model", "http://localhost:11434/v1", " ", nil, "model"},
		{"zero timeout", "http://localhost/v1", "m", embed.WithTimeout(0), "timeout"},
		{"batch too large", "http://localhost/v1", "m", embed.WithBatchSize(5000), "batchSize"},
		{"negative retries", "http://localhost/v1", "m", embed.WithRetries(-1), "retries"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opts []embed.OpenAIOption
			if tc.opt != nil {
				opts = append(opts, tc.opt)
			}
			_, err := embed.NewOpenAI(tc.url, tc.model, opts...)
			var he *h4r.Error
			if !errors.As(err, &he) || he.Field != tc.field {
				t.Fatalf("err = %v, want an *h4r.Error on %s", err, tc.field)
			}
		})
	}
}

func TestDecodeResponse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		body    string
		n       int
		wantErr string
		want    [][]float32
	}{
		{name: "ordered by index", body: `{"data":[{"index":1,"embedding":[0,2]},{"index":0,"embedding":[3,0]}]}`, n: 2, want: [][]float32{{1, 0}, {0, 1}}},
		{name: "extra fields ignored", body: `{"object":"list","model":"m","usage":{"total_tokens":3},"data":[{"object":"embedding","index":0,"embedding":[0,0,5]}]}`, n: 1, want: [][]float32{{0, 0, 1}}},
		{name: "not JSON", body: `<html>`, n: 1, wantErr: "malformed"},
		{name: "missing index", body: `{"data":[{"embedding":[1]}]}`, n: 1, wantErr: "no index"},
		{name: "index out of range", body: `{"data":[{"index":3,"embedding":[1]}]}`, n: 1, wantErr: "out of range"},
		{name: "index twice", body: `{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[1]}]}`, n: 2, wantErr: "appears twice"},
		{name: "base64 string", body: `{"data":[{"index":0,"embedding":"AAAA"}]}`, n: 1, wantErr: "malformed"},
		{name: "dimensions differ", body: `{"data":[{"index":0,"embedding":[1,0]},{"index":1,"embedding":[1]}]}`, n: 2, wantErr: "dimensions"},
		{name: "zero vector", body: `{"data":[{"index":0,"embedding":[0,0]}]}`, n: 1, wantErr: "zero vector"},
		{name: "beyond float32", body: `{"data":[{"index":0,"embedding":[1e300]}]}`, n: 1, wantErr: "finite float32"},
		{name: "empty embedding", body: `{"data":[{"index":0,"embedding":[]}]}`, n: 1, wantErr: "no embedding"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := embed.DecodeResponse([]byte(tc.body), tc.n)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i := range tc.want {
				if !slices.Equal(got[i], tc.want[i]) {
					t.Errorf("vector %d = %v, want %v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// FuzzDecodeResponse: whatever a server sends, decoding never panics, and
// what it accepts is n unit vectors of one dimension.
func FuzzDecodeResponse(f *testing.F) {
	f.Add([]byte(`{"data":[{"index":0,"embedding":[0.1,0.2]}]}`), 1)
	f.Add([]byte(`{"data":[{"index":1,"embedding":[1]},{"index":0,"embedding":[2]}]}`), 2)
	f.Add([]byte(`{"data":null}`), 0)
	f.Add([]byte(`{"error":{"message":"x"}}`), 1)
	f.Fuzz(func(t *testing.T, body []byte, n int) {
		if n < 0 || n > 64 {
			return
		}
		vecs, err := embed.DecodeResponse(body, n)
		if err != nil {
			return
		}
		if len(vecs) != n {
			t.Fatalf("%d vectors for n=%d", len(vecs), n)
		}
		for i, v := range vecs {
			if len(v) == 0 || len(v) != len(vecs[0]) {
				t.Fatalf("vector %d has %d dimensions", i, len(v))
			}
			if nv := norm(v); nv < 0.999 || nv > 1.001 {
				t.Fatalf("vector %d has norm %v", i, nv)
			}
		}
	})
}

// A server whose model changes under the client (a different model loaded
// behind the same name, a proxy switching backends) answers vectors of
// another dimension: they could not be compared with the stored ones, so
// the client refuses them, naming both dimensions, and keeps its dimension.
func TestOpenAIDimensionChangeRefused(t *testing.T) {
	srv, url := newEmbeddingsServer(t)
	c := newClient(t, url)
	if _, err := c.Embed(t.Context(), []string{"flaky selector"}); err != nil {
		t.Fatal(err)
	}
	if c.Dim() != 16 {
		t.Fatalf("Dim = %d after the first answer, want the fake's 16", c.Dim())
	}
	srv.mu.Lock()
	srv.script = []reply{{status: 200, body: `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.6,0.8]}]}`}}
	srv.mu.Unlock()
	_, err := c.Embed(t.Context(), []string{"login button"})
	if err == nil || !strings.Contains(err.Error(), "vectors have 2 dimensions, earlier answers had 16") {
		t.Fatalf("err = %v, want the dimension change named", err)
	}
	if c.Dim() != 16 {
		t.Errorf("Dim = %d after a refused answer, want 16", c.Dim())
	}
	if _, err := c.Embed(t.Context(), []string{"login button"}); err != nil {
		t.Errorf("a proper answer after the refused one: %v", err)
	}
}
