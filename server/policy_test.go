package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/policy/opatest"
	"github.com/h4r/h4r/server"
)

// draftRule is what the second policy adds to the bundled rules.
const draftRule = `
deny contains "draft" if "draft" in input.item.metadata.tags
`

// draftItem is found by the query below and is a draft.
var draftItem = h4r.Item{
	ID: "mem-draft", Kind: "note", Text: "rollout plan draft for the zeppelin feature flag",
	Content:  map[string]any{"plan": "enable zeppelin for 5% of users"},
	Metadata: h4r.Metadata{Tags: []string{"draft"}, Trust: ptrTo(0.9)},
}

func ptrTo(v float64) *float64 { return &v }

const draftQuery = `{"specialist": {"id": "planner", "securityLevel": "internal"},
  "query": {"type": "keyword", "text": "zeppelin rollout plan"}, "limit": 5, "explain": "all"}`

// policyStack is the real service with its policy read from a directory
// (or a remote OPA), watched, and decisions logged to a file.
func policyStack(t *testing.T, cfg config.Config) (url string, a *app.App) {
	t.Helper()
	ctx := context.Background()
	cfg.DataDir = t.TempDir()
	cfg.GeneratorTimeout, cfg.RequestTimeout = 30*time.Second, 30*time.Second
	a, err := app.Open(ctx, cfg, app.WithClock(clock), app.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if _, err := a.Store.Upsert(ctx, append(fixtureItems(t), draftItem)); err != nil {
		t.Fatal(err)
	}
	// Anonymous audit: the tests read policy drops from explainability.items.
	s := &stack{srv: server.New(a.Engine, a.Store, server.WithLogger(quiet), server.WithRequestTimeout(cfg.RequestTimeout), server.WithPolicy(a.Policy), server.WithAnonymousAudit(true)), store: a.Store}
	return s.serve(t), a
}

func writePolicyFile(t *testing.T, dir, src string) {
	t.Helper()
	tmp := filepath.Join(dir, ".tmp.rego.part")
	if err := os.WriteFile(tmp, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "context.rego")); err != nil {
		t.Fatal(err)
	}
}

func policyStatus(t *testing.T, url string) h4r.PolicyStatus {
	t.Helper()
	r := do(t, http.MethodGet, url+"/v1/policy", nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET /v1/policy: %d %s", r.status, r.body)
	}
	var st h4r.PolicyStatus
	if err := json.Unmarshal(r.body, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func readiness(t *testing.T, url string) (int, map[string]string) {
	t.Helper()
	r := do(t, http.MethodGet, url+"/health/ready", nil)
	var body struct {
		Checks map[string]string `json:"checks"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Fatal(err)
	}
	return r.status, body.Checks
}

// draftVerdict returns the pack's policy revision and whether mem-draft was
// delivered; it fails the test if mem-draft was not a candidate.
func draftVerdict(p *h4r.Pack) (revision string, kept bool, err error) {
	for _, it := range p.Explainability.Items {
		if it.ID == draftItem.ID {
			return p.Explainability.Slicing.PolicyRevision, it.Reason == h4r.ReasonKept, nil
		}
	}
	return "", false, fmt.Errorf("mem-draft is not among the candidates")
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestPolicyReloadUnderARunningServer changes the policy directory while
// the server answers requests: the new policy is picked up, every request
// is decided wholly by one revision, a broken policy is refused (the old
// one keeps deciding; GET /v1/policy and /health/ready say so), and every
// drop is in the decision log with its request id.
func TestPolicyReloadUnderARunningServer(t *testing.T) {
	dir := t.TempDir()
	base, err := os.ReadFile("../policy/rego/context.rego")
	if err != nil {
		t.Fatal(err)
	}
	writePolicyFile(t, dir, string(base))
	logFile := filepath.Join(t.TempDir(), "decisions.jsonl")
	cfg := config.Default()
	cfg.PolicyDir, cfg.PolicyWatch, cfg.DecisionLog = dir, true, logFile
	url, _ := policyStack(t, cfg)

	st := policyStatus(t, url)
	if st.Mode != h4r.PolicyEmbedded || st.Source != dir || !st.Watching || st.Revision == "" || st.LoadedAt.IsZero() {
		t.Fatalf("status = %+v", st)
	}
	rev1 := st.Revision
	rev, kept, err := draftVerdict(decodePack(t, post(t, url+"/v1/context-pack", draftQuery)))
	if err != nil || !kept || rev != rev1 {
		t.Fatalf("first policy: revision %s kept %v (%v); want %s and kept", rev, kept, err, rev1)
	}

	// Requests keep coming while the policy changes; each must be decided
	// by one revision: the draft is kept under the first, dropped under the
	// second.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var mixed []string
	seen := map[string]int{}
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				r, err := send(http.MethodPost, url+"/v1/context-pack", []byte(draftQuery))
				if err != nil || r.status != http.StatusOK {
					mu.Lock()
					mixed = append(mixed, fmt.Sprintf("request failed: %v %d", err, r.status))
					mu.Unlock()
					return
				}
				var p h4r.Pack
				json.Unmarshal(r.body, &p)
				rev, kept, err := draftVerdict(&p)
				mu.Lock()
				seen[rev]++
				if err != nil || kept != (rev == rev1) {
					mixed = append(mixed, fmt.Sprintf("revision %s kept %v (%v)", rev, kept, err))
				}
				mu.Unlock()
			}
		})
	}
	writePolicyFile(t, dir, string(base)+draftRule)
	waitUntil(t, "the new policy", func() bool { return policyStatus(t, url).Revision != rev1 })
	rev2 := policyStatus(t, url).Revision
	waitUntil(t, "a pack decided by the new policy", func() bool { mu.Lock(); defer mu.Unlock(); return seen[rev2] > 0 })
	close(stop)
	wg.Wait()
	if len(mixed) > 0 {
		t.Fatalf("packs not decided by one policy: %v", mixed)
	}
	if st := policyStatus(t, url); st.Reloads != 1 || st.LastError != "" {
		t.Errorf("status after the reload = %+v", st)
	}

	// A broken policy is refused.
	writePolicyFile(t, dir, string(base)+"\ndeny contains x if {\n")
	waitUntil(t, "the refusal", func() bool { return policyStatus(t, url).LastError != "" })
	st = policyStatus(t, url)
	if st.Revision != rev2 || !strings.Contains(st.LastError, "context.rego:") || st.LastErrorAt == nil {
		t.Errorf("status after a broken policy = %+v", st)
	}
	if code, checks := readiness(t, url); code != http.StatusOK || checks["policy"] != server.PolicyReloadFailed {
		t.Errorf("/health/ready = %d %v, want 200 with policy %s", code, checks, server.PolicyReloadFailed)
	}
	r := post(t, url+"/v1/context-pack", draftQuery, "X-Request-Id", "req-after-broken")
	if rev, kept, err := draftVerdict(decodePack(t, r)); err != nil || kept || rev != rev2 {
		t.Errorf("after a broken policy: revision %s kept %v (%v); want the second policy deciding", rev, kept, err)
	}

	writePolicyFile(t, dir, string(base))
	waitUntil(t, "the fixed policy", func() bool { return policyStatus(t, url).LastError == "" })
	if code, checks := readiness(t, url); code != http.StatusOK || checks["policy"] != server.PolicyReady {
		t.Errorf("/health/ready = %d %v after the fix", code, checks)
	}

	// The decision log has the drop of the request above, by id, without
	// the item's content.
	f, err := os.Open(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	found := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "zeppelin for 5%") {
			t.Fatalf("decision log holds item content: %s", sc.Text())
		}
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("decision log line %q: %v", sc.Text(), err)
		}
		if rec["requestId"] == "req-after-broken" && rec["itemId"] == draftItem.ID {
			found = rec["decision"] == "drop" && rec["reason"] == "draft" && rec["policyRevision"] == rev2 && rec["specialist"] == "planner"
		}
	}
	if !found {
		t.Errorf("no drop of mem-draft for req-after-broken in the decision log")
	}
}

// TestRemotePolicyServer: with SCS_OPA_URL, a real OPA server decides; when
// it stops, /health/ready says so and packs leave items out (fail closed)
// with a warning, or are decided by the local rules when the fallback is on.
func TestRemotePolicyServer(t *testing.T) {
	base, err := os.ReadFile("../policy/rego/context.rego")
	if err != nil {
		t.Fatal(err)
	}
	for _, fallback := range []bool{false, true} {
		t.Run(fmt.Sprintf("fallback=%v", fallback), func(t *testing.T) {
			opa := opatest.Start(t, map[string]string{"context.rego": string(base) + draftRule})
			cfg := config.Default()
			cfg.OPAURL, cfg.OPATimeout, cfg.OPAFallbackLocal = opa.URL, 30*time.Second, fallback
			cfg.OPACacheTTL = 0 // every pack asks OPA
			url, _ := policyStack(t, cfg)
			if st := policyStatus(t, url); st.Mode != h4r.PolicyRemote || st.Source != opa.URL {
				t.Fatalf("status = %+v", st)
			}
			p := decodePack(t, post(t, url+"/v1/context-pack", draftQuery))
			if _, kept, err := draftVerdict(p); err != nil || kept {
				t.Fatalf("remote policy kept the draft (%v)", err)
			}
			if code, checks := readiness(t, url); code != http.StatusOK || checks["opa"] != "ok" {
				t.Errorf("/health/ready = %d %v", code, checks)
			}

			opa.Stop()
			if code, checks := readiness(t, url); code != http.StatusServiceUnavailable || checks["opa"] != "unavailable" {
				t.Errorf("/health/ready with OPA stopped = %d %v", code, checks)
			}
			p = decodePack(t, post(t, url+"/v1/context-pack", draftQuery))
			_, kept, err := draftVerdict(p)
			if err != nil {
				t.Fatal(err)
			}
			warnings := strings.Join(p.Explainability.Warnings, " | ")
			if fallback {
				// The local rules know nothing of drafts: the draft passes,
				// and the pack says the fallback decided.
				if !kept || !p.Explainability.Slicing.FallbackUsed || !strings.Contains(warnings, "local fallback rules decided") {
					t.Errorf("fallback pack: kept %v, stats %+v, warnings %s", kept, p.Explainability.Slicing, warnings)
				}
			} else if len(p.Results) != 0 || !strings.Contains(warnings, "OPA unreachable") {
				t.Errorf("with OPA stopped and no fallback: %d results, warnings %s", len(p.Results), warnings)
			}
		})
	}
}

// TestRemotePolicyCache: decisions cached from a real OPA keep answering
// while it is down (for the TTL), and the counters show it.
func TestRemotePolicyCache(t *testing.T) {
	base, err := os.ReadFile("../policy/rego/context.rego")
	if err != nil {
		t.Fatal(err)
	}
	opa := opatest.Start(t, map[string]string{"context.rego": string(base) + draftRule})
	cfg := config.Default()
	cfg.OPAURL, cfg.OPATimeout, cfg.OPACacheTTL = opa.URL, 30*time.Second, time.Hour
	url, _ := policyStack(t, cfg)
	first := decodePack(t, post(t, url+"/v1/context-pack", draftQuery))
	opa.Stop()
	second := decodePack(t, post(t, url+"/v1/context-pack", draftQuery))
	for i, p := range []*h4r.Pack{first, second} {
		if _, kept, err := draftVerdict(p); err != nil || kept || len(p.Explainability.Warnings) > 0 {
			t.Errorf("pack %d: kept %v (%v), warnings %q; want the draft dropped by OPA's (cached) decision", i, kept, err, p.Explainability.Warnings)
		}
	}
	st := policyStatus(t, url)
	if st.Cache == nil || st.Cache.Hits == 0 || st.Cache.Misses == 0 {
		t.Errorf("cache counters = %+v, want hits and misses", st.Cache)
	}
}
