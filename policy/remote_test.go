package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/policy/opatest"
)

func bundledModules() map[string]string { return map[string]string{BundledFile: bundledPolicy} }

func newRemote(t *testing.T, url string, opts ...RemoteOption) *Remote {
	t.Helper()
	// A patient deadline: the outcome must not depend on machine load.
	r, err := NewRemote(url, append([]RemoteOption{WithTimeout(10 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRemoteAgreesWithEmbedded asks a real OPA server every case of the
// decision table, one by one and in a batch.
func TestRemoteAgreesWithEmbedded(t *testing.T) {
	opa := opatest.Start(t, bundledModules())
	remote := newRemote(t, opa.URL)
	var items []*h4r.Item
	var want []h4r.Decision
	for _, tc := range decisionCases {
		it := memory(tc.meta)
		it.ID = tc.name
		got, err := remote.Decide(t.Context(), tc.spec, it)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !equalDecision(got, tc.want) {
			t.Errorf("%s: remote decided %+v, want %+v", tc.name, got, tc.want)
		}
		if tc.spec.SecurityLevel == h4r.Internal && len(tc.spec.AuthorizedGroups) == 0 {
			items, want = append(items, it), append(want, tc.want)
		}
	}
	for i, r := range remote.DecideBatch(t.Context(), spec(h4r.Internal), items) {
		if r.Err != nil || !equalDecision(r.Decision, want[i]) {
			t.Errorf("batch item %q: %+v (%v), want %+v", items[i].ID, r.Decision, r.Err, want[i])
		}
	}
	if remote.Revision() != RemoteRevision {
		t.Errorf("Revision = %q, want %q (no bundle)", remote.Revision(), RemoteRevision)
	}
}

func equalDecision(a, b h4r.Decision) bool {
	return a.Allow == b.Allow && a.Redact == b.Redact && a.Reason == b.Reason && strings.Join(a.RedactedFields, ",") == strings.Join(b.RedactedFields, ",")
}

func TestRemotePackSettings(t *testing.T) {
	opa := opatest.Start(t, map[string]string{"p.rego": `package cmo.context

allow := true

pack := {"maxTokens": 100} if input.specialist.securityLevel == "public"
`})
	remote := newRemote(t, opa.URL)
	for level, want := range map[h4r.SecurityLevel]h4r.PackSettings{h4r.Public: {MaxTokens: 100}, h4r.Restricted: {}} {
		got, err := remote.PackSettings(t.Context(), spec(level))
		if err != nil || got != want {
			t.Errorf("%s: PackSettings = %+v, %v; want %+v", level, got, err, want)
		}
	}
}

// TestRemotePackSettingsTolerant: a policy without a pack rule, or one
// whose every document answers the same (allow on every path), or whose
// pack carries keys of its own, sets what it says it sets; unknown keys
// are logged once each.
func TestRemotePackSettingsTolerant(t *testing.T) {
	cases := []struct {
		name    string
		modules map[string]string
		want    h4r.PackSettings
		logged  []string
	}{
		{"no pack rule", map[string]string{"p.rego": "package cmo.context\n\nallow := true\n"}, h4r.PackSettings{}, nil},
		{"allow on every path", map[string]string{
			"p.rego":    "package cmo.context\n\nallow := true\n",
			"pack.rego": "package cmo.context.pack\n\nallow := true\n",
		}, h4r.PackSettings{}, []string{"allow"}},
		{"unknown keys beside known ones", map[string]string{"p.rego": `package cmo.context

allow := true

pack := {"maxItems": 5, "owner": "team-a", "allow": true}
`}, h4r.PackSettings{MaxItems: 5}, []string{"allow", "owner"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opa := opatest.Start(t, tc.modules)
			var logs bytes.Buffer
			remote := newRemote(t, opa.URL, WithRemoteLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			for range 3 {
				got, err := remote.PackSettings(t.Context(), spec(h4r.Public))
				if err != nil || got != tc.want {
					t.Fatalf("PackSettings = %+v, %v; want %+v", got, err, tc.want)
				}
			}
			if n := strings.Count(logs.String(), "not a pack setting"); n != len(tc.logged) {
				t.Errorf("logged %d warnings, want %d (once per key): %s", n, len(tc.logged), logs.String())
			}
			for _, k := range tc.logged {
				if !strings.Contains(logs.String(), "key="+k) {
					t.Errorf("no warning names key %q: %s", k, logs.String())
				}
			}
		})
	}
}

// TestRemoteFailsClosed: every way OPA can fail to decide is an error for
// the item, never an allow.
func TestRemoteFailsClosed(t *testing.T) {
	cases := []struct {
		name    string
		modules map[string]string
		url     func(string) string
		wantErr string
	}{
		{"decision undefined", map[string]string{"p.rego": "package other\n\nx := 1\n"}, nil, "undefined"},
		{"allow not a boolean", map[string]string{"p.rego": "package cmo.context\n\nallow := \"yes\"\n"}, nil, "decision.allow is"},
		{"conflict in OPA", map[string]string{"p.rego": "package cmo.context\n\nallow := true\n\nreason := \"a\"\n\nreason := \"b\" if input.item.kind\n"}, nil, "OPA answered 500"},
		{"wrong path on the server", map[string]string{"p.rego": "package cmo.context\n\nallow := true\n"}, func(u string) string { return u + "/nope" }, "OPA answered"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opa := opatest.Start(t, tc.modules)
			url := opa.URL
			if tc.url != nil {
				url = tc.url(url)
			}
			remote := newRemote(t, url)
			d, err := remote.Decide(t.Context(), spec(h4r.Public), memory(h4r.Metadata{}))
			if err == nil || d.Allow {
				t.Fatalf("Decide = %+v, %v; want an error", d, err)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q does not contain %q", err, tc.wantErr)
			}
		})
	}
}

// TestRemoteStoppedMidRun: OPA answers, then is stopped; the next batch
// fails for every item, fast (one unreachable call stops the batch), and
// the status says OPA could not be reached.
func TestRemoteStoppedMidRun(t *testing.T) {
	opa := opatest.Start(t, bundledModules())
	remote := newRemote(t, opa.URL, WithConcurrency(2))
	items := benchItems(20)
	for _, r := range remote.DecideBatch(t.Context(), spec(h4r.Internal, "qa"), items) {
		if r.Err != nil {
			t.Fatalf("while OPA runs: %v", r.Err)
		}
	}
	opa.Stop()
	results := remote.DecideBatch(t.Context(), spec(h4r.Internal, "qa"), items)
	notAsked := 0
	for _, r := range results {
		if r.Err == nil || r.Decision.Allow {
			t.Fatalf("after OPA stopped: %+v", r)
		}
		if strings.Contains(r.Err.Error(), "not asked") {
			notAsked++
		}
	}
	if notAsked == 0 {
		t.Errorf("every item waited for its own call; want the batch cut short after the first unreachable call")
	}
	if st := remote.Status(); st.LastError == "" || st.Mode != h4r.PolicyRemote {
		t.Errorf("Status = %+v, want mode remote with the last error", st)
	}
}

func TestNewRemoteRejectsBadURLs(t *testing.T) {
	for _, u := range []string{"", "localhost:8181", "ftp://x", "http://"} {
		if _, err := NewRemote(u); h4r.ErrorCode(err) != h4r.EINVALID {
			t.Errorf("NewRemote(%q) error = %v, want invalid_argument", u, err)
		}
	}
}

// TestRemoteReusesConnections: a batch of many items opens at most as many
// connections as it makes calls at once.
func TestRemoteReusesConnections(t *testing.T) {
	opa := opatest.Start(t, bundledModules())
	var mu sync.Mutex
	conns := 0
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 2
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		conns++
		mu.Unlock()
		return dial(ctx, network, addr)
	}
	remote := newRemote(t, opa.URL, WithConcurrency(2), WithHTTPClient(&http.Client{Transport: tr}))
	for range 3 {
		for _, r := range remote.DecideBatch(t.Context(), spec(h4r.Public), benchItems(30)) {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
	}
	// Two at a time need two connections; a connection goes back to the
	// pool just after its answer is read, so a call now and then dials
	// anew. Without reuse it would be 90.
	if conns > 10 {
		t.Errorf("opened %d connections for 90 calls two at a time, want them reused (at most 10)", conns)
	}
}

// FuzzRemoteAnswer: whatever an OPA server (or something pretending to be
// one) answers, reading it never panics and allows an item only when the
// answer's result says allow: true.
func FuzzRemoteAnswer(f *testing.F) {
	for _, s := range []string{
		`{"result": {"allow": true, "redact": true, "redactedFields": ["$.text"], "reason": "pii"}}`,
		`{"result": {"allow": "true"}}`, `{"result": null}`, `{}`, `[]`, `{"result": {"allow": true, "redactedFields": [1]}}`,
		`{"result": {"allow": false}, "provenance": {"bundles": {"b": {"revision": "r1"}}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var out opaResponse
		if err := json.Unmarshal(body, &out); err != nil || len(out.Result) == 0 {
			return
		}
		d, err := decodeRemoteDecision(out.Result)
		if err != nil {
			if d.Allow {
				t.Fatalf("failed decision allows: %s", body)
			}
			return
		}
		var doc struct {
			Allow any `json:"allow"`
		}
		if json.Unmarshal(out.Result, &doc) != nil || (d.Allow && doc.Allow != true) {
			t.Fatalf("allowed an item for %s", body)
		}
	})
}
