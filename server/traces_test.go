package server_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/auth"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/server"
	"github.com/h4r/h4r/trace"
)

const webhookSecret = "It's a Secret to Everybody"

// traceStack is the real stack (app.Open: SQLite, the bundled policy, the
// slicer, the engine) with the trace routes, behind testdata/keys.json.
type traceStack struct {
	base string
	app  *app.App
}

func newTraceStack(t testing.TB, secret string, opts ...server.Option) *traceStack {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.GeneratorTimeout, cfg.RequestTimeout = 30*time.Second, 30*time.Second
	a, err := app.Open(context.Background(), cfg, app.WithClock(clock), app.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	keys, err := auth.Load("testdata/keys.json")
	if err != nil {
		t.Fatal(err)
	}
	svc := trace.NewService(a.Store, trace.WithClock(clock), trace.WithLogger(quiet), trace.WithSearch(a.Engine, a.Slicer))
	opts = append([]server.Option{server.WithLogger(quiet), server.WithAuthenticator(keys), server.WithClock(clock),
		server.WithRequestTimeout(cfg.RequestTimeout), server.WithTraces(svc, server.TraceOptions{WebhookSecret: []byte(secret)})}, opts...)
	srv := server.New(a.Engine, a.Store, opts...)
	st := &stack{srv: srv, store: a.Store}
	return &traceStack{base: st.serve(t), app: a}
}

func traceFixture(t testing.TB, change func(map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(readFile(t, "../trace/testdata/trace.json"), &m); err != nil {
		t.Fatal(err)
	}
	if change != nil {
		change(m)
	}
	b, _ := json.Marshal(m)
	return b
}

func sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

func (s *traceStack) webhook(t testing.TB, event, delivery string, body []byte, signature string) response {
	t.Helper()
	h := []string{"X-GitHub-Event", event, "X-GitHub-Delivery", delivery, "User-Agent", "GitHub-Hookshot/a5788b1"}
	if signature != "" {
		h = append(h, "X-Hub-Signature-256", signature)
	}
	return do(t, http.MethodPost, s.base+"/webhook/github", body, h...)
}

func githubPayload(t testing.TB, name string) []byte {
	return readFile(t, "../trace/testdata/github/"+name+".json")
}

const traceSHA = "9f2c4e1a7b3d5f60812c4e6a8b0d2f4a6c8e0b1d"

func (s *traceStack) getTrace(t testing.TB, path, key string) (int, map[string]any) {
	t.Helper()
	r := do(t, http.MethodGet, s.base+path, nil, bearer(key)...)
	var out struct {
		Trace map[string]any `json:"trace"`
	}
	if r.status == http.StatusOK {
		if err := json.Unmarshal(r.body, &out); err != nil {
			t.Fatal(err)
		}
	}
	return r.status, out.Trace
}

func (s *traceStack) search(t testing.TB, key, body string) trace.SearchResponse {
	t.Helper()
	r := post(t, s.base+"/v1/search", body, bearer(key)...)
	if r.status != http.StatusOK {
		t.Fatalf("search %s: %d %s", body, r.status, r.body)
	}
	var out trace.SearchResponse
	if err := json.Unmarshal(r.body, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTraceLifecycle is a new user's first session over HTTP: ingest, read
// it pending, a signed merged pull request lands it, search finds it by
// status landed.
func TestTraceLifecycle(t *testing.T) {
	s := newTraceStack(t, webhookSecret)
	if r := post(t, s.base+"/v1/traces", string(traceFixture(t, nil)), bearer(ingestKey)...); r.status != http.StatusOK {
		t.Fatalf("ingest: %d %s", r.status, r.body)
	}
	status, tr := s.getTrace(t, "/v1/trace/acme/gateway/"+traceSHA, publicKey)
	if status != http.StatusOK || tr["status"] != "pending" {
		t.Fatalf("GET: %d, status %v; want 200 pending", status, tr["status"])
	}
	body := githubPayload(t, "pull_request_merged")
	r := s.webhook(t, "pull_request", "72d3162e-cc78-11e3-81ab-4c9367dc0958", body, sign(webhookSecret, body))
	if r.status != http.StatusOK || string(bytes.TrimSpace(r.body)) != `{"processed":true,"traces_updated":1}` {
		t.Fatalf("webhook: %d %s", r.status, r.body)
	}
	status, tr = s.getTrace(t, "/v1/trace/"+traceSHA, publicKey)
	if status != http.StatusOK || tr["status"] != "landed" || tr["merged_via"] != "#42" || tr["landed_at"] != "2026-11-20T15:02:10Z" {
		t.Fatalf("after the merge: %d %v via %v at %v", status, tr["status"], tr["merged_via"], tr["landed_at"])
	}
	landed := s.search(t, publicKey, `{"query": "rate limiting in the auth middleware", "filters": {"status": "landed"}, "include_decisions": true}`)
	if len(landed.Results) != 1 || landed.Results[0].Trace["sha"] != traceSHA || landed.Total != 1 {
		t.Fatalf("search status landed: %+v", landed)
	}
	if len(landed.Results[0].MatchedDecisions) == 0 {
		t.Errorf("include_decisions: no matched decisions")
	}
	if pending := s.search(t, publicKey, `{"query": "rate limiting in the auth middleware", "filters": {"status": "pending"}}`); len(pending.Results) != 0 {
		t.Fatalf("search status pending found %d traces after the merge", len(pending.Results))
	}
	// Replayed delivery: not applied twice.
	r = s.webhook(t, "pull_request", "72d3162e-cc78-11e3-81ab-4c9367dc0958", body, sign(webhookSecret, body))
	if string(bytes.TrimSpace(r.body)) != `{"processed":true,"traces_updated":0}` {
		t.Fatalf("replay: %d %s", r.status, r.body)
	}
}

// TestRestrictedTraceNeverReachesAPublicKey: a trace restricted to a
// group is not found through search (itself or its decisions) or either
// GET by a key outside the group, and is by one inside it.
func TestRestrictedTraceNeverReachesAPublicKey(t *testing.T) {
	s := newTraceStack(t, webhookSecret)
	body := traceFixture(t, func(m map[string]any) {
		m["restricted_to_groups"] = []string{"ops"}
		m["summary"] = "Secret incident fix for the auth middleware rate limiter"
	})
	if r := post(t, s.base+"/v1/traces", string(body), bearer(ingestKey)...); r.status != http.StatusOK {
		t.Fatalf("ingest: %d %s", r.status, r.body)
	}
	query := `{"query": "auth middleware rate limiter incident", "include_decisions": true, "limit": 100}`
	for _, key := range []string{publicKey, healerKey} {
		res := s.search(t, key, query)
		if len(res.Results) != 0 || res.Total != 0 {
			t.Errorf("%s: search delivered %d results of a trace restricted to ops", key, len(res.Results))
		}
		for _, path := range []string{"/v1/trace/acme/gateway/" + traceSHA, "/v1/trace/" + traceSHA} {
			if status, tr := s.getTrace(t, path, key); status != http.StatusNotFound || tr != nil {
				t.Errorf("%s: GET %s = %d %v, want 404", key, path, status, tr)
			}
		}
	}
	res := s.search(t, restrictedKey, query)
	if len(res.Results) != 1 || len(res.Results[0].MatchedDecisions) == 0 {
		t.Fatalf("the ops key: %d results, want the trace with its decisions", len(res.Results))
	}
	if status, _ := s.getTrace(t, "/v1/trace/acme/gateway/"+traceSHA, restrictedKey); status != http.StatusOK {
		t.Fatalf("the ops key: GET = %d", status)
	}
}

func TestTraceRoutesRefuse(t *testing.T) {
	s := newTraceStack(t, webhookSecret)
	// The same commit in two repositories (a fork).
	for _, repo := range []string{"acme/gateway", "acme/fork"} {
		body := traceFixture(t, func(m map[string]any) { m["repo"] = repo })
		if r := post(t, s.base+"/v1/traces", string(body), bearer(ingestKey)...); r.status != http.StatusOK {
			t.Fatalf("ingest: %d %s", r.status, r.body)
		}
	}
	cases := []struct {
		name, method, path, body, key string
		status                        int
		field                         string
		message                       string
	}{
		{"ambiguous sha names the repositories", "GET", "/v1/trace/" + traceSHA, "", publicKey, 400, "sha", "acme/fork, acme/gateway"},
		{"unknown sha", "GET", "/v1/trace/abcdef1234", "", publicKey, 404, "sha", "trace not found"},
		{"bad sha", "GET", "/v1/trace/acme/gateway/xyz", "", publicKey, 400, "sha", ""},
		{"trace with an unknown field", "POST", "/v1/traces", `{"sha":"abcdef1","repo":"a/b","timestamp":"2026-11-20T00:00:00Z","summry":"x"}`, ingestKey, 400, "summry", ""},
		{"trace without a timestamp", "POST", "/v1/traces", `{"sha":"abcdef1","repo":"a/b"}`, ingestKey, 400, "timestamp", ""},
		{"trace with a read key", "POST", "/v1/traces", string(traceFixture(t, nil)), publicKey, 403, "", ""},
		{"search limit over 100", "POST", "/v1/search", `{"query":"x","limit":101}`, publicKey, 400, "limit", ""},
		{"search without a query", "POST", "/v1/search", `{"filters":{"status":"landed"}}`, publicKey, 400, "query", ""},
		{"search with an unknown status", "POST", "/v1/search", `{"query":"x","filters":{"status":"merged"}}`, publicKey, 400, "filters.status", ""},
		{"search with an unknown filter", "POST", "/v1/search", `{"query":"x","filters":{"team":"a"}}`, publicKey, 400, "filters.team", ""},
		{"search min_score over 1", "POST", "/v1/search", `{"query":"x","min_score":2}`, publicKey, 400, "min_score", ""},
		{"stats with a read key", "GET", "/v1/stats", "", publicKey, 403, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var body []byte
			if tc.body != "" {
				body = []byte(tc.body)
			}
			r := do(t, tc.method, s.base+tc.path, body, bearer(tc.key)...)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			e := checkErrorShape(t, r)
			if e.Field != tc.field || !strings.Contains(e.Message, tc.message) {
				t.Fatalf("error %+v, want field %q and a message with %q", e, tc.field, tc.message)
			}
		})
	}
}

func TestTraceStats(t *testing.T) {
	s := newTraceStack(t, webhookSecret)
	for i, repo := range []string{"acme/gateway", "acme/fork", "acme/fork"} {
		body := traceFixture(t, func(m map[string]any) { m["repo"] = repo; m["sha"] = fmt.Sprintf("%040x", i+1) })
		if r := post(t, s.base+"/v1/traces", string(body), bearer(ingestKey)...); r.status != http.StatusOK {
			t.Fatalf("ingest: %d %s", r.status, r.body)
		}
	}
	r := do(t, http.MethodGet, s.base+"/v1/stats", nil, bearer(adminKey)...)
	var st trace.Stats
	if err := json.Unmarshal(r.body, &st); err != nil || r.status != http.StatusOK {
		t.Fatalf("%d %s %v", r.status, r.body, err)
	}
	if st.Traces.Total != 3 || st.Traces.Pending != 3 || st.Repos != 2 || st.Decisions.Total != 6 ||
		st.Decisions.ByCategory["architecture"] != 3 || st.Decisions.ByCategory["implementation"] != 3 {
		t.Fatalf("stats %+v", st)
	}
}

// TestGitHubWebhookRefuses: every way a delivery is refused, and the
// events that are not applied.
func TestGitHubWebhookRefuses(t *testing.T) {
	merged := githubPayload(t, "pull_request_merged")
	huge := append([]byte(`{"action":"closed","padding":"`), bytes.Repeat([]byte("a"), 26<<20)...)
	huge = append(huge, `"}`...)
	noRepo := []byte(`{"action":"closed","number":1,"pull_request":{"merged":true,"head":{"ref":"x","sha":"abcdef1"}}}`)
	noCommitID := []byte(`{"ref":"refs/heads/main","repository":{"full_name":"acme/gateway","default_branch":"main"},"commits":[{"message":"m"}]}`)
	wrongType := []byte(`{"action":"closed","number":"forty-two","pull_request":{},"repository":{"full_name":"acme/gateway"}}`)
	cases := []struct {
		name, secret, event, delivery string
		body                          []byte
		signature                     string
		status                        int
		field                         string
		answer                        string
	}{
		{"no secret configured", "", "pull_request", "d1", merged, sign("", merged), 503, "", ""},
		{"missing signature", webhookSecret, "pull_request", "d1", merged, "", 401, "X-Hub-Signature-256", ""},
		{"sha1 signature only", webhookSecret, "pull_request", "d1", merged, "sha1=82474c4fdedd8c2d2e6802db3e49f4afd96b3eab", 401, "X-Hub-Signature-256", ""},
		{"signature under another secret", webhookSecret, "pull_request", "d1", merged, sign("guess", merged), 401, "X-Hub-Signature-256", ""},
		{"signature of another body", webhookSecret, "pull_request", "d1", merged, sign(webhookSecret, append([]byte(" "), merged...)), 401, "X-Hub-Signature-256", ""},
		{"signature not hex", webhookSecret, "pull_request", "d1", merged, "sha256=zz", 401, "X-Hub-Signature-256", ""},
		{"malformed JSON", webhookSecret, "pull_request", "d1", []byte(`{"action":`), sign(webhookSecret, []byte(`{"action":`)), 400, "", ""},
		{"missing repository", webhookSecret, "pull_request", "d1", noRepo, sign(webhookSecret, noRepo), 400, "repository", ""},
		{"missing commit id", webhookSecret, "push", "d1", noCommitID, sign(webhookSecret, noCommitID), 400, "commits[0].id", ""},
		{"wrong type", webhookSecret, "pull_request", "d1", wrongType, sign(webhookSecret, wrongType), 400, "number", ""},
		{"missing delivery id", webhookSecret, "pull_request", "", merged, sign(webhookSecret, merged), 400, "X-GitHub-Delivery", ""},
		{"26 MB body", webhookSecret, "pull_request", "d1", huge, sign(webhookSecret, huge), 400, "", ""},
		{"an event not handled", webhookSecret, "issues", "d2", merged, sign(webhookSecret, merged), 200, "", `{"processed":false,"traces_updated":0}`},
		{"closed without merging", webhookSecret, "pull_request", "d3", githubPayload(t, "pull_request_closed_unmerged"), sign(webhookSecret, githubPayload(t, "pull_request_closed_unmerged")), 200, "", `{"processed":false,"traces_updated":0}`},
		{"push to another branch", webhookSecret, "push", "d4", githubPayload(t, "push_other_branch"), sign(webhookSecret, githubPayload(t, "push_other_branch")), 200, "", `{"processed":false,"traces_updated":0}`},
	}
	stacks := map[string]*traceStack{}
	for _, secret := range []string{"", webhookSecret} {
		s := newTraceStack(t, secret)
		if r := post(t, s.base+"/v1/traces", string(traceFixture(t, nil)), bearer(ingestKey)...); r.status != http.StatusOK {
			t.Fatalf("ingest: %d", r.status)
		}
		stacks[secret] = s
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := stacks[tc.secret]
			r := s.webhook(t, tc.event, tc.delivery, tc.body, tc.signature)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %.300s", r.status, tc.status, r.body)
			}
			if tc.status != http.StatusOK {
				if e := checkErrorShape(t, r); e.Field != tc.field {
					t.Fatalf("field %q, want %q (%s)", e.Field, tc.field, e.Message)
				}
			} else if got := string(bytes.TrimSpace(r.body)); got != tc.answer {
				t.Fatalf("answer %s, want %s", got, tc.answer)
			}
			if _, tr := s.getTrace(t, "/v1/trace/acme/gateway/"+traceSHA, adminKey); tr["status"] != "pending" {
				t.Fatalf("a refused delivery changed the trace to %v", tr["status"])
			}
		})
	}
}

// TestGitHubPushLandsAndReverts: a push to the default branch lands its
// commit; a later push whose commit reverts it marks it reverted, with
// reverted_by, and lowers its trust so that it ranks below landed work.
func TestGitHubPushLandsAndReverts(t *testing.T) {
	s := newTraceStack(t, webhookSecret)
	const direct = "5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed"
	body := traceFixture(t, func(m map[string]any) { m["sha"] = direct; m["branch"] = "main" })
	if r := post(t, s.base+"/v1/traces", string(body), bearer(ingestKey)...); r.status != http.StatusOK {
		t.Fatalf("ingest: %d", r.status)
	}
	push := githubPayload(t, "push")
	if r := s.webhook(t, "push", "p1", push, sign(webhookSecret, push)); string(bytes.TrimSpace(r.body)) != `{"processed":true,"traces_updated":1}` {
		t.Fatalf("push: %d %s", r.status, r.body)
	}
	_, tr := s.getTrace(t, "/v1/trace/acme/gateway/"+direct, adminKey)
	if tr["status"] != "landed" || tr["landed_at"] != "2026-11-20T15:00:00Z" || tr["merged_via"] != direct {
		t.Fatalf("after the push: %v at %v via %v", tr["status"], tr["landed_at"], tr["merged_via"])
	}
	it, _ := s.app.Store.Get(context.Background(), "acme/gateway@"+direct)
	if it.Metadata.TrustValue() != trace.TrustLanded {
		t.Fatalf("trust %v after landing, want %v", it.Metadata.TrustValue(), trace.TrustLanded)
	}
	revert := githubPayload(t, "push_revert")
	if r := s.webhook(t, "push", "p2", revert, sign(webhookSecret, revert)); string(bytes.TrimSpace(r.body)) != `{"processed":true,"traces_updated":1}` {
		t.Fatalf("revert push: %d %s", r.status, r.body)
	}
	_, tr = s.getTrace(t, "/v1/trace/acme/gateway/"+direct, adminKey)
	if tr["status"] != "reverted" || tr["reverted_by"] != "bad0bad0bad0bad0bad0bad0bad0bad0bad0bad0" || tr["landed_at"] != "2026-11-20T15:00:00Z" {
		t.Fatalf("after the revert: %v by %v, landed_at %v", tr["status"], tr["reverted_by"], tr["landed_at"])
	}
	it, _ = s.app.Store.Get(context.Background(), "acme/gateway@"+direct)
	if it.Metadata.TrustValue() != trace.TrustReverted || it.Metadata.Extra["status"] != "reverted" {
		t.Fatalf("trust %v status %v after the revert", it.Metadata.TrustValue(), it.Metadata.Extra["status"])
	}
	if res := s.search(t, publicKey, `{"query":"rate limiting auth middleware","filters":{"status":"reverted"}}`); len(res.Results) != 1 {
		t.Fatalf("a reverted trace is still found as a lesson: %d results", len(res.Results))
	}
}

// landingPush is the n-th push to repo's default branch, of a commit no
// trace records: a delivery of its own (its body differs from every
// other's) that counts against the repository's rate limit.
func landingPush(repo string, n int) []byte {
	return fmt.Appendf(nil, `{"ref":"refs/heads/main","after":"%040x","repository":{"full_name":%q,"default_branch":"main"},"commits":[{"id":"%040x"}]}`, n, repo, n)
}

func TestGitHubWebhookRateLimitPerRepo(t *testing.T) {
	s := newTraceStack(t, webhookSecret)
	for i := range trace.WebhookPerRepoPerMinute {
		body := landingPush("acme/gateway", i)
		if r := s.webhook(t, "push", fmt.Sprintf("rl-%d", i), body, sign(webhookSecret, body)); r.status != http.StatusOK {
			t.Fatalf("delivery %d: %d %s", i, r.status, r.body)
		}
	}
	last := landingPush("acme/gateway", trace.WebhookPerRepoPerMinute)
	r := s.webhook(t, "push", "rl-last", last, sign(webhookSecret, last))
	if r.status != http.StatusTooManyRequests {
		t.Fatalf("delivery %d: %d, want 429", trace.WebhookPerRepoPerMinute+1, r.status)
	}
	other := landingPush("acme/other", 0)
	if r := s.webhook(t, "push", "rl-other", other, sign(webhookSecret, other)); r.status != http.StatusOK {
		t.Fatalf("another repository is limited too: %d", r.status)
	}
}

// TestTraceShortSHA: GET /v1/trace accepts, as git does, the start of a
// commit's SHA (7 digits or more) that exactly one trace the key may see
// starts with; when several do, 400 naming sha and listing them. A trace
// the key may not see neither answers a short SHA nor makes one
// ambiguous.
func TestTraceShortSHA(t *testing.T) {
	s := newTraceStack(t, webhookSecret)
	const (
		shaA   = "abcdef1000000000000000000000000000000001"
		shaB   = "abcdef1100000000000000000000000000000002"
		hidden = "abcdef1900000000000000000000000000000003"
	)
	for _, v := range []struct {
		sha    string
		groups []string
	}{{traceSHA, nil}, {shaA, nil}, {shaB, nil}, {hidden, []string{"ops"}}} {
		body := traceFixture(t, func(m map[string]any) {
			m["sha"] = v.sha
			if v.groups != nil {
				m["restricted_to_groups"] = v.groups
			}
		})
		if r := post(t, s.base+"/v1/traces", string(body), bearer(ingestKey)...); r.status != http.StatusOK {
			t.Fatalf("ingest %s: %d %s", v.sha, r.status, r.body)
		}
	}
	tests := []struct {
		name, path, key string
		status          int
		sha             string // of the trace answered (200)
		message         string // in the error (otherwise)
	}{
		{"7 digits, one commit", "/v1/trace/acme/gateway/" + traceSHA[:7], publicKey, 200, traceSHA, ""},
		{"7 digits, upper case", "/v1/trace/acme/gateway/" + strings.ToUpper(traceSHA[:7]), publicKey, 200, traceSHA, ""},
		{"7 digits without the repository", "/v1/trace/" + traceSHA[:7], publicKey, 200, traceSHA, ""},
		{"8 digits tell two apart", "/v1/trace/acme/gateway/abcdef10", publicKey, 200, shaA, ""},
		{"ambiguous", "/v1/trace/acme/gateway/abcdef1", publicKey, 400, "", "ambiguous: 2 traced commits in acme/gateway start with it (acme/gateway@" + shaA + ", acme/gateway@" + shaB + ")"},
		{"ambiguous without the repository", "/v1/trace/abcdef1", publicKey, 400, "", "ambiguous: 2 traced commits"},
		{"ambiguous to a key that sees the third", "/v1/trace/acme/gateway/abcdef1", restrictedKey, 400, "", "3 traced commits"},
		{"a hidden trace's start", "/v1/trace/acme/gateway/abcdef19", publicKey, 404, "", "trace not found"},
		{"a hidden trace's start, to a key that may see it", "/v1/trace/acme/gateway/abcdef19", restrictedKey, 200, hidden, ""},
		{"another repository", "/v1/trace/acme/fork/" + traceSHA[:7], publicKey, 404, "", "trace not found"},
		{"6 digits", "/v1/trace/acme/gateway/" + traceSHA[:6], publicKey, 400, "", "7 to 64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, http.MethodGet, s.base+tt.path, nil, bearer(tt.key)...)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d: %s", r.status, tt.status, r.body)
			}
			if tt.status == http.StatusOK {
				var out struct {
					Trace map[string]any `json:"trace"`
				}
				if err := json.Unmarshal(r.body, &out); err != nil || out.Trace["sha"] != tt.sha {
					t.Fatalf("answered %s, want the trace of %s", r.body, tt.sha)
				}
				return
			}
			if e := checkErrorShape(t, r); e.Field != "sha" || !strings.Contains(e.Message, tt.message) || strings.Contains(e.Message, hidden) && tt.key == publicKey {
				t.Fatalf("error %+v, want field sha and a message with %q", e, tt.message)
			}
		})
	}
}
