package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/auth"
	"github.com/h4r/h4r/metrics"
	"github.com/h4r/h4r/server"
	"github.com/h4r/h4r/trace"
)

// Canary classes: what protects the marker.
const (
	classRestricted = "restricted" // a key without clearance must never see it
	classRedacted   = "redacted"   // policy redacts or withholds it from everyone
	classDeleted    = "deleted"    // deleted after seeding
)

// canary is one protected marker: a random word written into the
// protected text of one kind of stored data, so that a leak anywhere is a
// byte match.
type canary struct {
	kind   string // item, trace-http, trace-nats, decision, memory, chunk, trajectory, stored-pack, a2a-task
	class  string
	marker string
	what   string // where the marker was written, for the report
	// markedID: the marker is in an item's id, which a pack may name
	// without the item's text (canary_retrieval_test.go).
	markedID bool
}

// auditor reports whether k's packs explain the items policy denied.
func auditor(k keyClass) bool {
	return slices.Contains(k.routes, "audit") || slices.Contains(k.routes, "admin")
}

// newMarker is a word no text in the repository or the fixtures holds.
func newMarker(class string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "cnry" + class[:3] + hex.EncodeToString(b)
}

// Key classes the probes run as. The seeder and the vault key are the
// controls: they are cleared for the restricted canaries.
type keyClass struct {
	name   string
	key    string // "" sends no Authorization header
	level  string
	groups []string
	routes []string
}

var (
	keyNone         = keyClass{name: "no-key"}
	keyPublic       = keyClass{"public", "cnry-public-key", "public", nil, []string{"read"}}
	keyGroup        = keyClass{"group", "cnry-group-key", "internal", []string{"qa"}, []string{"read", "ingest"}}
	keyConfidential = keyClass{"confidential", "cnry-confidential-key", "confidential", []string{"qa", "ops"}, []string{"read", "ingest", "audit"}}
	keyAdmin        = keyClass{"admin", "cnry-admin-key", "restricted", []string{"qa", "ops"}, []string{"read", "ingest", "admin", "audit"}}
	keyVault        = keyClass{"vault", "cnry-vault-key", "restricted", []string{"vault"}, []string{"read"}}
	keySeeder       = keyClass{"seeder", "cnry-seeder-key", "restricted", []string{"vault", "qa"}, []string{"read", "ingest", "admin", "audit"}}
)

// probeKeys are the key classes every surface is probed with.
var probeKeys = []keyClass{keyNone, keyPublic, keyGroup, keyConfidential, keyAdmin}

// writeKeysFile writes the keys of every class (SHA-256 hashes).
func writeKeysFile(t *testing.T, dir string) string { return writeTenantKeysFile(t, dir, nil) }

// writeTenantKeysFile writes the keys of every class, each in the tenant
// tenantOf gives it ("": the default tenant; tenantOf nil: all of them).
func writeTenantKeysFile(t *testing.T, dir string, tenantOf func(keyClass) string) string {
	t.Helper()
	var entries []string
	for _, k := range append(slices.Clone(probeKeys[1:]), keyVault, keySeeder) {
		sum := sha256.Sum256([]byte(k.key))
		groups, _ := json.Marshal(append([]string{}, k.groups...))
		routes, _ := json.Marshal(k.routes)
		tenantField := ""
		if tenantOf != nil && tenantOf(k) != "" {
			tenantField = fmt.Sprintf(`, "tenant": %q`, tenantOf(k))
		}
		entries = append(entries, fmt.Sprintf(`{"sha256": %q, "principal": {"id": "cnry_%s", "type": "specialist", "securityLevel": %q, "authorizedGroups": %s}, "routes": %s%s}`,
			hex.EncodeToString(sum[:]), k.name, k.level, groups, routes, tenantField))
	}
	p := filepath.Join(dir, "keys.json")
	if err := os.WriteFile(p, []byte("["+strings.Join(entries, ",\n")+"]"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// canaryServer is one replica: the API exactly as cmdServe wires it
// (apiServer, traceOptions, jobs), served on loopback.
type canaryServer struct {
	base   string
	debug  string   // the profiling listener (H4R_DEBUG_ADDR), as h4r serve starts it
	routes []string // "METHOD /path" as the echo router holds them
	app    *app.App
	stall  *stallSlicer // of the app (the seed tenant's, with tenants)
}

// startCanaryServer starts a replica over vars. wrap, when not nil,
// wraps the handler (the self-test's planted leak).
func startCanaryServer(t *testing.T, vars map[string]string, wrap func(*app.App, http.Handler) http.Handler) *canaryServer {
	t.Helper()
	if vars["H4R_TENANTS_FILE"] != "" {
		return startTenantCanaryServer(t, vars)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cfg, err := app.LoadConfig(env(vars))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := auth.Load(cfg.APIKeysFile)
	if err != nil {
		t.Fatal(err)
	}
	log := quietLog()
	m := metrics.New()
	tm := trace.NewMetrics(m.Registry())
	stall := &stallSlicer{}
	a, err := app.Open(ctx, cfg, app.WithLogger(log), app.WithEmbeddingObserver(tm.ObserveEmbedding), stall.appOption())
	if err != nil {
		t.Fatal(err)
	}
	stall.inner.Store(a.Slicer)
	tr, err := app.OpenTraces(ctx, a, tm, log)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(ctx, log); err != nil {
		t.Fatal(err)
	}
	jb, err := app.OpenJobs(ctx, a, log)
	if err != nil {
		t.Fatal(err)
	}
	api := apiServer(cfg, a, keys, false, log, m, tr.Fanout, append(traceOptions(cfg, a, tr), server.WithJobs(jb))...)
	e, ok := api.Handler().(*echo.Echo)
	if !ok {
		t.Fatalf("the server's handler is %T, not the echo router the route registry is read from", api.Handler())
	}
	var routes []string
	for _, r := range e.Router().Routes() {
		routes = append(routes, r.Method+" "+r.Path)
	}
	sort.Strings(routes)
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = api.HTTPServer()
	if wrap != nil {
		ts.Config.Handler = wrap(a, ts.Config.Handler)
	}
	ts.Config.Handler = stallRequests(ts.Config.Handler)
	ts.Listener = api.Listener(ts.Listener)
	ts.Start()
	t.Cleanup(func() {
		ts.Close()
		cancel()
		_ = jb.Close()
		_ = tr.Close(context.Background())
		_ = a.Close()
	})
	return &canaryServer{base: ts.URL, debug: startCanaryDebug(t), routes: routes, app: a, stall: stall}
}

// finding is one canary byte seen where it must not be.
type finding struct {
	surface, key, where string
	c                   canary
	snippet             string
}

func (f finding) String() string {
	return fmt.Sprintf("LEAK surface=%s key=%s canary=%s/%s (%s) marker=%s at %s: …%s…",
		f.surface, f.key, f.c.kind, f.c.class, f.c.what, f.c.marker, f.where, f.snippet)
}

// detector scans what the probes got for every canary's marker.
type detector struct {
	mu       sync.Mutex
	canaries []canary
	findings []finding
	seen     map[string]bool // surface|key|marker|where, reported once
	scanned  map[string]int  // surface → observations scanned
}

func newDetector() *detector {
	return &detector{seen: map[string]bool{}, scanned: map[string]int{}}
}

func (d *detector) add(c canary) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.canaries = append(d.canaries, c)
}

// scan checks b for every marker whose class allow does not permit.
func (d *detector) scan(surface, key, where string, b []byte, allow func(canary) bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.scanned[surface]++
	for _, c := range d.canaries {
		i := bytes.Index(b, []byte(c.marker))
		if i < 0 || (allow != nil && allow(c)) {
			continue
		}
		id := surface + "|" + key + "|" + c.marker + "|" + where
		if d.seen[id] {
			continue
		}
		d.seen[id] = true
		lo, hi := max(0, i-80), min(len(b), i+len(c.marker)+40)
		d.findings = append(d.findings, finding{surface: surface, key: key, where: where, c: c,
			snippet: strings.ReplaceAll(string(b[lo:hi]), "\n", `\n`)})
	}
}

// record adds a finding the probe made itself (an existence oracle).
func (d *detector) record(f finding) {
	d.mu.Lock()
	defer d.mu.Unlock()
	id := f.surface + "|" + f.key + "|" + f.c.marker + "|" + f.where
	if !d.seen[id] {
		d.seen[id] = true
		d.findings = append(d.findings, f)
	}
}

func (d *detector) all() []finding {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.findings)
}

// httpResult is one answer, with everything a leak could ride in.
type httpResult struct {
	status int
	header http.Header
	body   []byte
	err    error
}

// asBytes is what the detector scans: the status, every header and the
// body (or the transport error).
func (r httpResult) asBytes() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n", r.status)
	_ = r.header.Write(&b)
	b.Write(r.body)
	if r.err != nil {
		b.WriteString(r.err.Error())
	}
	return b.Bytes()
}

var canaryClient = &http.Client{Timeout: patience}

// call sends one request as key and returns what came back.
func call(base string, k keyClass, method, path string, body any, header ...string) httpResult {
	var r io.Reader
	if body != nil {
		switch v := body.(type) {
		case string:
			r = strings.NewReader(v)
		case []byte:
			r = bytes.NewReader(v)
		default:
			b, err := json.Marshal(v)
			if err != nil {
				return httpResult{err: err}
			}
			r = bytes.NewReader(b)
		}
	}
	req, err := http.NewRequest(method, base+path, r)
	if err != nil {
		return httpResult{err: err}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if k.key != "" {
		req.Header.Set("Authorization", "Bearer "+k.key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := canaryClient.Do(req)
	if err != nil {
		return httpResult{err: err}
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return httpResult{status: res.StatusCode, header: res.Header, body: b, err: err}
}

// mustCall is call for seeding: anything but want fails the test.
func mustCall(t *testing.T, base string, k keyClass, method, path string, body any, want int) []byte {
	t.Helper()
	r := call(base, k, method, path, body)
	if r.err != nil || r.status != want {
		t.Fatalf("seeding %s %s: status %d (want %d), %v: %.600s", method, path, r.status, want, r.err, r.body)
	}
	return r.body
}

// eventually retries f until it holds or patience runs out.
func eventually(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within %s", what, patience)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startCanaryDebug serves the profiling listener beside a replica, as
// h4r serve does with H4R_DEBUG_ADDR, and returns its base URL.
func startCanaryDebug(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	bound, stop, err := startDebug(ctx, "127.0.0.1:0", quietLog())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); stop() })
	return "http://" + bound
}
