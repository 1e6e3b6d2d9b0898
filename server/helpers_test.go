package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/mcptools"
	"github.com/h4r/h4r/server"
	"github.com/h4r/h4r/tokens"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// now is the clock of the store and the engine, a day after the newest
// fixture item, so that recency (and with it every score) is the same on
// every run.
var now = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func clock() time.Time { return now }

// counter is the real cl100k_base counter, loaded once for the package.
var counter = sync.OnceValues(func() (*tokens.Counter, error) { return tokens.New(tokens.CL100K) })

// quiet discards logs: the handlers log internal errors and panics, which
// some tests provoke on purpose.
var quiet = slog.New(slog.DiscardHandler)

// stack is the real service as the CLI wires it (app.Open): a SQLite store
// in a temp directory, the bundled OPA policy, the slicer, the pack builder
// and the engine, behind the HTTP server.
type stack struct {
	srv   *server.Server
	store app.Store
}

// newStack builds the stack over a store seeded with testdata/items.json.
func newStack(t testing.TB, opts ...server.Option) *stack {
	t.Helper()
	return newStackWith(t, nil, opts...)
}

// newStackWith is newStack with a change to the configuration app.Open
// wires the service from.
func newStackWith(t testing.TB, configure func(*config.Config), opts ...server.Option) *stack {
	t.Helper()
	ctx := context.Background()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	// Generous, so that a slow -race run never degrades a pack.
	cfg.GeneratorTimeout, cfg.RequestTimeout = 30*time.Second, 30*time.Second
	// The fixture is too small for the learned embedder to learn from: the
	// hashing embedder (with its fusion settings) gives its semantic and
	// hybrid queries vectors.
	cfg.Embedder, cfg.FusionVector, cfg.VectorCandidates = "hash", 0.1, 20
	if configure != nil {
		configure(&cfg)
	}
	a, err := app.Open(ctx, cfg, app.WithClock(clock), app.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := a.Close(); err != nil {
			t.Errorf("closing the store: %v", err)
		}
	})
	if _, err := a.Store.Upsert(ctx, fixtureItems(t)); err != nil {
		t.Fatal(err)
	}
	reg := mcptools.NewRegistry("h4r", "test")
	mcptools.Standard(reg, mcptools.Deps{Packer: a.Engine, Memory: a.Memory, Items: a.Store.Count, Timeout: cfg.RequestTimeout})
	opts = append([]server.Option{server.WithLogger(quiet), server.WithRequestTimeout(cfg.RequestTimeout),
		server.WithMemory(a.Memory), server.WithMCP(reg)}, opts...)
	return &stack{srv: server.New(a.Engine, a.Store, opts...), store: a.Store}
}

// serve starts the stack on loopback as cmd/h4r serves it: its
// HTTPServer (timeouts, header limit) over its Listener (the connection
// cap, net/http's own errors in the error shape). It returns the base URL.
func (s *stack) serve(t testing.TB) string {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = s.srv.HTTPServer()
	ts.Listener = s.srv.Listener(ts.Listener)
	ts.Start()
	t.Cleanup(ts.Close)
	return ts.URL
}

// fixtureItems reads testdata/items.json.
func fixtureItems(t testing.TB) []h4r.Item {
	t.Helper()
	var batch struct{ Items []h4r.Item }
	if err := json.Unmarshal(readFile(t, "testdata/items.json"), &batch); err != nil {
		t.Fatal(err)
	}
	return batch.Items
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// response is what a request returned.
type response struct {
	status int
	header http.Header
	body   []byte
	close  bool // the server closes the connection (Connection: close)
}

// send sends a request with an optional JSON body and extra headers
// ("Name", "value" pairs; "Host" sets the request's Host) and reads the
// whole answer. It is safe to call from any goroutine.
func send(method, url string, body []byte, header ...string) (response, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		return response{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return response{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return response{}, err
	}
	return response{status: res.StatusCode, header: res.Header, body: b, close: res.Close}, nil
}

// do is send for the test goroutine: a transport error fails the test.
func do(t testing.TB, method, url string, body []byte, header ...string) response {
	t.Helper()
	r, err := send(method, url, body, header...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func post(t testing.TB, url string, body string, header ...string) response {
	t.Helper()
	return do(t, http.MethodPost, url, []byte(body), header...)
}

// errorResponse is the item contract's error shape, decoded strictly: any other key
// fails the decode.
type errorResponse struct {
	Error *h4r.Error `json:"error"`
}

// codes is the fixed set of error codes.
var codes = map[string]bool{
	h4r.EINVALID: true, h4r.ENOTFOUND: true, h4r.EUNAUTH: true, h4r.EFORBIDDEN: true,
	h4r.EEXHAUSTED: true, h4r.EUNAVAILABLE: true, h4r.EDEADLINE: true, h4r.EINTERNAL: true,
	h4r.EMETHOD: true, h4r.EMEDIATYPE: true, h4r.ETIMEOUT: true, h4r.ECANCELED: true,
}

// checkErrorShape returns the error of an error response, failing the test
// unless the body is exactly the item contract's error shape with a known code, a
// message, and the status HTTPStatus gives that code.
func checkErrorShape(t testing.TB, r response) *h4r.Error {
	t.Helper()
	var e errorResponse
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil || e.Error == nil {
		t.Fatalf("status %d: body is not the error shape (%v): %s", r.status, err, r.body)
	}
	if !codes[e.Error.Code] {
		t.Errorf("unknown error code %q in %s", e.Error.Code, r.body)
	}
	if e.Error.Message == "" {
		t.Errorf("error without a message: %s", r.body)
	}
	if want := server.HTTPStatus(e.Error.Code); r.status != want {
		t.Errorf("status %d for code %s, want %d", r.status, e.Error.Code, want)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	return e.Error
}

// decodePack decodes a 200 context-pack answer.
func decodePack(t testing.TB, r response) *h4r.Pack {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d, want 200: %s", r.status, r.body)
	}
	var p h4r.Pack
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("decoding the pack: %v\n%s", err, r.body)
	}
	return &p
}

// healer is the specialist of the docs/concepts.md examples, with the qa group.
const healer = `{"id": "playwright_healer", "securityLevel": "internal", "authorizedGroups": ["qa"]}`

// healerBody is a context-pack request of the healer for the fixture's
// login failures.
const healerBody = `{"specialist": ` + healer + `,
	"query": {"type": "hybrid", "text": "login test failures with selector issues"},
	"limit": 10}`
