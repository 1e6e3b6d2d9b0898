package server_test

// Regression tests of policy leaks, through the HTTP API on
// loopback. Each failed before its fix:
//   - TestDeniedItemsAreOnlyCounted: explainability.items listed the id,
//     reason and signals of every item policy denied, to every key, so that
//     a public key could test words against a hidden item's text ("hunter2").
//   - TestPIIInTextIsNotDelivered and TestIngestRefusesPIIPathsItCannotApply:
//     PII in text was delivered when piiFields named only content; an item
//     with containsPII and no piiFields was delivered whole; piiFields that
//     the redactor cannot apply ($..x, filters) or that miss a key only by
//     case were accepted.
//   - TestPolicyErrorsStayInTheLog: policy file paths and lines reached the
//     pack (warnings, item details), and a pack whose every candidate failed
//     its policy decision was "ok".
//   - TestNetworkBuiltinsAreRefused: a policy calling http.send (or
//     opa.runtime, which hands out the environment) compiled and ran.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/auth"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/server"
)

// auditKey is auditor's key: public, routes read and audit.
const auditKey = "audit-key"

// hiddenItem holds a credential: policy denies it to every specialist. Only
// its text has the word hunter2, and it is the only item with status
// "rotating"; it links to mem-fix.
const hiddenItem = `{"id": "sec-hunter", "kind": "config",
  "text": "The staging database password is hunter2 until the next rotation.",
  "content": {"password": "hunter2"},
  "metadata": {"hasCredentials": true, "trust": 0.9, "importance": 0.9, "status": "rotating"},
  "links": [{"type": "configures", "target": "mem-fix"}]}`

// TestDeniedItemsAreOnlyCounted: a caller that may not audit learns of
// items the policy denied only as a count (slicing.totalDroppedPolicy),
// whether it finds them by a word of their text, a filter on their
// metadata, min_score or an anchor. Audit and admin keys see every verdict,
// and the decision log keeps them all.
func TestDeniedItemsAreOnlyCounted(t *testing.T) {
	logFile := filepath.Join(t.TempDir(), "decisions.jsonl")
	keys, err := auth.Load("testdata/keys.json")
	if err != nil {
		t.Fatal(err)
	}
	base := newStackWith(t, func(c *config.Config) { c.DecisionLog = logFile },
		server.WithAuthenticator(keys), server.WithClock(clock)).serve(t)
	if r := post(t, base+"/v1/items", hiddenItem, bearer(adminKey)...); r.status != http.StatusOK {
		t.Fatalf("ingest: %d %s", r.status, r.body)
	}

	tests := []struct {
		name  string
		key   string
		body  string
		audit bool // the key may see what policy hid
	}{
		{"a word of its text", publicKey, `{"query": {"type": "keyword", "text": "hunter2"}}`, false},
		{"a word of its text, internal key", healerKey, `{"query": {"type": "keyword", "text": "hunter2"}}`, false},
		{"a filter on its metadata", publicKey, `{"query": {"type": "keyword", "text": "staging database password", "filters": {"status": "rotating"}}}`, false},
		{"under min_score", publicKey, `{"query": {"type": "keyword", "text": "hunter2 login selector"}, "min_score": 0.99}`, false},
		{"as an anchor", publicKey, `{"query": {"type": "causal", "text": ""}, "anchors": ["sec-hunter"]}`, false},
		{"audit key", auditKey, `{"query": {"type": "keyword", "text": "hunter2"}}`, true},
		{"admin key", adminKey, `{"query": {"type": "keyword", "text": "hunter2"}}`, true},
	}
	for _, tt := range tests {
		// Every candidate the caller may learn of is explained, so that a
		// leak through explainability.items would show.
		tt.body = strings.TrimSuffix(tt.body, "}") + `, "explain": "all"}`
		for _, route := range []string{"context-pack", "a2a"} {
			t.Run(tt.name+" via "+route, func(t *testing.T) {
				var p *h4r.Pack
				var raw []byte
				if route == "context-pack" {
					r := post(t, base+"/v1/context-pack", tt.body, bearer(tt.key)...)
					p, raw = decodePack(t, r), r.body
				} else {
					r := post(t, base+"/v1/a2a", `{"meta": {"id": "m-leak", "type": "ContextRequest"}, "payload": `+tt.body+`}`, bearer(tt.key)...)
					env := decodeEnvelope(t, r)
					p, raw = decodePack(t, response{status: r.status, body: env.Payload}), env.Payload
				}
				// mem-fix matches none of these queries: only a hop from the
				// hidden item's link could bring it, and hops never start
				// from an item the specialist may not see (audit or not).
				if slices.ContainsFunc(p.Results, func(r h4r.Result) bool { return r.ID == "mem-fix" }) {
					t.Errorf("mem-fix was delivered: the hidden item's link was followed")
				}
				if !tt.audit {
					checkOnlyCounted(t, p, raw)
					return
				}
				i := slices.IndexFunc(p.Explainability.Items, func(e h4r.ItemExplanation) bool { return e.ID == "sec-hunter" })
				if i < 0 {
					t.Fatalf("an audit caller does not see the denied item: %+v", p.Explainability.Items)
				}
				if e := p.Explainability.Items[i]; e.Reason != h4r.ReasonPolicy || e.Detail != "policy: credentials" || e.Signals[h4r.Relevance] == 0 {
					t.Errorf("audit view of the denied item = %+v, want reason policy, detail policy: credentials, signals", e)
				}
			})
		}
	}

	// The hunter2 query must count the denied item, and the decision log
	// must name it.
	p := decodePack(t, post(t, base+"/v1/context-pack", tests[0].body, bearer(publicKey)...))
	if p.Explainability.Slicing.TotalDroppedPolicy != 1 {
		t.Errorf("totalDroppedPolicy = %d, want the denied item counted", p.Explainability.Slicing.TotalDroppedPolicy)
	}
	log, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(log, []byte(`"itemId":"sec-hunter"`)) || !bytes.Contains(log, []byte(`"specialist":"public_bot"`)) {
		t.Errorf("the decision log lacks the public key's drop of sec-hunter:\n%s", log)
	}
}

// checkOnlyCounted fails unless the pack says nothing of sec-hunter or of
// any item policy decided against: no id, no verdict, no rank gap, and no
// generator counting it.
func checkOnlyCounted(t *testing.T, p *h4r.Pack, raw []byte) {
	t.Helper()
	if bytes.Contains(raw, []byte("sec-hunter")) || bytes.Contains(raw, []byte("hunter2")) {
		t.Errorf("the pack names the denied item:\n%s", raw)
	}
	visible := 0
	for i, e := range p.Explainability.Items {
		switch e.Reason {
		case h4r.ReasonKept, h4r.ReasonBudgetBytes, h4r.ReasonBudgetTokens, h4r.ReasonBudgetItems:
		default:
			t.Errorf("a caller that may not audit sees a %s verdict: %+v", e.Reason, e)
		}
		if e.Rank != i+1 {
			t.Errorf("item %s has rank %d at position %d: a gap would tell where a hidden item ranked", e.ID, e.Rank, i+1)
		}
		visible++
	}
	for name, st := range p.Sources {
		if st.Candidates > visible {
			t.Errorf("generator %s counts %d candidates, but only %d are visible", name, st.Candidates, visible)
		}
	}
}

// piiItems are items whose personal data is in their text, or nowhere
// named, or (textClean) only in content.
const piiItems = `{"items": [
  {"id": "pii-text", "kind": "test_failure",
   "text": "Checkout selector test failed for jane.doe@example.com on staging.",
   "content": {"selector": "#checkout", "personalData": {"email": "jane.doe@example.com"}},
   "metadata": {"trust": 0.9, "containsPII": true, "piiFields": ["$.content.personalData"]}},
  {"id": "pii-unnamed", "kind": "test_failure",
   "text": "Checkout selector flake: call Maria Rossi at +1-555-0199 before rerunning.",
   "content": {"selector": "#checkout-retry", "phone": "+1-555-0199"},
   "metadata": {"trust": 0.9, "containsPII": true}},
  {"id": "pii-clean", "kind": "test_failure",
   "text": "Checkout selector timeout; the personal data is in the report only.",
   "content": {"selector": "#checkout-submit", "personalData": {"email": "carlos@example.org"}},
   "metadata": {"trust": 0.9, "containsPII": true, "piiFields": ["$.content.personalData"], "textClean": true}}
]}`

// TestPIIInTextIsNotDelivered: an item with containsPII has its text
// redacted with its piiFields unless it says its text is clean; with no
// piiFields, its text and content are redacted. No personal data reaches
// the results, the TL;DR or the agent slice.
func TestPIIInTextIsNotDelivered(t *testing.T) {
	base := newStack(t).serve(t)
	if r := post(t, base+"/v1/items", piiItems); r.status != http.StatusOK {
		t.Fatalf("ingest: %d %s", r.status, r.body)
	}
	r := post(t, base+"/v1/context-pack", `{"specialist": `+healer+`, "query": {"type": "keyword", "text": "checkout selector"}, "limit": 10}`)
	p := decodePack(t, r)
	for _, secret := range []string{"jane.doe", "Maria Rossi", "555-0199", "carlos@"} {
		if bytes.Contains(r.body, []byte(secret)) {
			t.Errorf("the pack delivers personal data %q:\n%s", secret, r.body)
		}
	}
	tests := []struct {
		id       string
		text     string // "" for the redaction marker
		content  bool   // content is delivered (with its personal data redacted)
		redacted []string
	}{
		{"pii-text", "", true, []string{"$.content.personalData", "$.text"}},
		{"pii-unnamed", "", false, []string{"$.content", "$.text"}},
		{"pii-clean", "Checkout selector timeout; the personal data is in the report only.", true, []string{"$.content.personalData"}},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			i := slices.IndexFunc(p.Results, func(res h4r.Result) bool { return res.ID == tt.id })
			if i < 0 {
				t.Fatalf("%s is not delivered: %+v", tt.id, p.Explainability.Items)
			}
			res := p.Results[i]
			want := tt.text
			if want == "" {
				want = h4r.RedactionMarker
			}
			if res.Text != want {
				t.Errorf("text %q, want %q", res.Text, want)
			}
			if (len(res.Content) > 0) != tt.content { // a wholly redacted content is {}
				t.Errorf("content %v, want delivered: %v", res.Content, tt.content)
			}
			if !res.Metadata.Redacted || !slices.Equal(res.Metadata.RedactedFields, tt.redacted) {
				t.Errorf("redacted %v %v, want %v", res.Metadata.Redacted, res.Metadata.RedactedFields, tt.redacted)
			}
		})
	}
}

// TestIngestRefusesPIIPathsItCannotApply: a piiFields path that the
// redactor cannot apply, or that misses a content key only by case, is an
// ingest error naming metadata.piiFields[i]; paths that name nothing yet,
// or every element, are accepted.
func TestIngestRefusesPIIPathsItCannotApply(t *testing.T) {
	base := newStack(t).serve(t)
	item := func(id, paths string) string {
		return `{"id": "` + id + `", "text": "checkout note", "content": {"personalData": {"email": "a@b.c"}, "people": [{"email": "x@y.z"}]},
		  "metadata": {"containsPII": true, "piiFields": ` + paths + `}}`
	}
	tests := []struct {
		name    string
		body    string
		field   string // "" when accepted
		message string
	}{
		{"a key in another case", item("p1", `["$.content.PersonalData"]`), "metadata.piiFields[0]", "personalData"},
		{"a nested key in another case", item("p2", `["$.text", "$.content.personalData.Email"]`), "metadata.piiFields[1]", "email"},
		{"a key in another case under a wildcard", item("p3", `["$.content.people[*].EMAIL"]`), "metadata.piiFields[0]", "email"},
		{"recursive descent", item("p4", `["$..email"]`), "metadata.piiFields[0]", "recursive descent"},
		{"a filter", item("p5", `["$.content.people[?(@.email)]"]`), "metadata.piiFields[0]", "expected *, an index or a quoted name"},
		{"a metadata path", item("p6", `["$.metadata.owner"]`), "metadata.piiFields[0]", "$.text or $.content"},
		{"in a batch", `{"items": [` + item("p7", `["$.content.personalData"]`) + `, ` + item("p8", `["$.content.PERSONALDATA"]`) + `]}`, "items[1].metadata.piiFields[0]", "case"},
		{"exact paths", item("p9", `["$.text", "$.content.personalData", "$.content.people[*].email"]`), "", ""},
		{"a path that names nothing yet", item("p10", `["$.content.address"]`), "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := post(t, base+"/v1/items", tt.body)
			if tt.field == "" {
				if r.status != http.StatusOK {
					t.Fatalf("status %d, want 200: %s", r.status, r.body)
				}
				return
			}
			e := checkErrorShape(t, r)
			if e.Code != h4r.EINVALID || e.Field != tt.field || !strings.Contains(e.Message, tt.message) {
				t.Errorf("error %+v, want invalid_argument on %s mentioning %q", e, tt.field, tt.message)
			}
		})
	}
}

// brokenPolicies fail at evaluation, for every item or for the pack rule,
// on top of the bundled rules.
var brokenPolicies = []struct {
	name, rule string
}{
	{"an item rule", `
deny contains "odd" if to_number(input.item.id) > 0
`},
	{"the pack rule", `
pack := {"maxTokens": to_number(input.specialist.id)}
`},
}

// TestPolicyErrorsStayInTheLog: when no decision can be made, the pack is
// degraded and says so without the policy's file names and lines (not to
// an audit caller either); the decision log has them.
func TestPolicyErrorsStayInTheLog(t *testing.T) {
	bundled, err := os.ReadFile("../policy/rego/context.rego")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range brokenPolicies {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writePolicyFile(t, dir, string(bundled)+tt.rule)
			logFile := filepath.Join(t.TempDir(), "decisions.jsonl")
			base := newStackWith(t, func(c *config.Config) { c.PolicyDir, c.DecisionLog = dir, logFile },
				server.WithAnonymousAudit(true)).serve(t)
			r := post(t, base+"/v1/context-pack", healerBody)
			p := decodePack(t, r)
			if p.Status != h4r.StatusDegraded || len(p.Results) != 0 || p.Explainability.Slicing.TotalDroppedPolicy == 0 {
				t.Errorf("status %s, %d results, %d dropped by policy; want a degraded, empty pack",
					p.Status, len(p.Results), p.Explainability.Slicing.TotalDroppedPolicy)
			}
			for _, leak := range []string{".rego", dir, "to_number", "eval_builtin_error"} {
				if bytes.Contains(r.body, []byte(leak)) {
					t.Errorf("the pack holds %q:\n%s", leak, r.body)
				}
			}
			if !slices.ContainsFunc(p.Explainability.Warnings, func(w string) bool {
				return strings.Contains(w, "no policy decision could be made") || strings.Contains(w, "pack settings could not be read")
			}) {
				t.Errorf("no warning says the policy failed: %q", p.Explainability.Warnings)
			}
			log, err := os.ReadFile(logFile)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(log, []byte("context.rego:")) {
				t.Errorf("the decision log lacks the policy error's file and line:\n%s", log)
			}
		})
	}
}

// networkRules each call a built-in that reaches the network or the
// process environment.
var networkRules = []struct {
	builtin, rule string
}{
	{"http.send", `
deny contains "remote" if http.send({"method": "GET", "url": "http://127.0.0.1:9/"}).status_code != 200
`},
	{"net.lookup_ip_addr", `
deny contains "dns" if count(net.lookup_ip_addr("example.com")) > 0
`},
	{"opa.runtime", `
deny contains "env" if opa.runtime().env.HOME != ""
`},
}

// TestNetworkBuiltinsAreRefused: a policy calling a network or environment
// built-in does not load, at start or on reload, with an error naming the
// built-in and its file:line (shown to admins by GET /v1/policy), unless
// SCS_POLICY_NETWORK allows it.
func TestNetworkBuiltinsAreRefused(t *testing.T) {
	bundled, err := os.ReadFile("../policy/rego/context.rego")
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Count(string(bundled), "\n") + 2 // the rule's line: after the bundled file and one blank line
	open := func(t *testing.T, dir string, allow bool) (*app.App, error) {
		cfg := config.Default()
		cfg.DataDir, cfg.PolicyDir, cfg.PolicyNet = t.TempDir(), dir, allow
		a, err := app.Open(context.Background(), cfg, app.WithClock(clock), app.WithLogger(quiet))
		if err == nil {
			t.Cleanup(func() { a.Close() })
		}
		return a, err
	}
	for _, tt := range networkRules {
		t.Run(tt.builtin, func(t *testing.T) {
			dir := t.TempDir()
			writePolicyFile(t, dir, string(bundled)+tt.rule)
			_, err := open(t, dir, false)
			where := filepath.Join(dir, "context.rego") + ":" + itoa(line)
			if err == nil || !strings.Contains(err.Error(), tt.builtin) || !strings.Contains(err.Error(), where) || !strings.Contains(err.Error(), "SCS_POLICY_NETWORK") {
				t.Fatalf("start with %s: error %v, want one naming the built-in, %s and SCS_POLICY_NETWORK", tt.builtin, err, where)
			}
			if _, err := open(t, dir, true); err != nil {
				t.Fatalf("with SCS_POLICY_NETWORK=true: %v", err)
			}

			// On reload: the running policy stays, and the refusal names the
			// built-in.
			live := t.TempDir()
			writePolicyFile(t, live, string(bundled))
			cfg := config.Default()
			cfg.PolicyDir, cfg.PolicyWatch = live, true
			url, _ := policyStack(t, cfg)
			rev := policyStatus(t, url).Revision
			writePolicyFile(t, live, string(bundled)+tt.rule)
			waitUntil(t, "the refusal", func() bool { return policyStatus(t, url).LastError != "" })
			if st := policyStatus(t, url); st.Revision != rev || !strings.Contains(st.LastError, tt.builtin) {
				t.Errorf("status after the reload = %+v, want revision %s and an error naming %s", st, rev, tt.builtin)
			}
		})
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
