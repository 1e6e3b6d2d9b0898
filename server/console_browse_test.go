package server_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestConsoleBrowsersAccess checks who may open each browser: the route
// class the matching API route needs, and unavailable when the server was
// started without what the browser reads.
func TestConsoleBrowsersAccess(t *testing.T) {
	base := newAuthStack(t).serve(t)
	for _, tc := range []struct {
		name, key, path string
		status          int
	}{
		{"items need the read class", ingestKey, "/ui/items", http.StatusForbidden},
		{"items without a store to browse", healerKey, "/ui/items", http.StatusServiceUnavailable},
		{"traces need the read class", ingestKey, "/ui/traces", http.StatusForbidden},
		{"packs without a pack store", healerKey, "/ui/packs", http.StatusServiceUnavailable},
		{"jobs need the ingest class", healerKey, "/ui/jobs", http.StatusForbidden},
		{"a job needs the ingest class", healerKey, "/ui/jobs/job_x", http.StatusForbidden},
		{"jobs without a job runner", ingestKey, "/ui/jobs", http.StatusServiceUnavailable},
		{"benchmarks for any key", ingestKey, "/ui/bench", http.StatusOK},
		{"an unknown report", healerKey, "/ui/bench?report=2026-01-01/nope.md", http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBrowser(t, base)
			b.login(tc.key)
			if p := b.do(http.MethodGet, tc.path, nil); p.status != tc.status {
				t.Errorf("GET %s: %d, want %d: %.300s", tc.path, p.status, tc.status, p.body)
			}
		})
	}
	t.Run("without a session, the login page", func(t *testing.T) {
		p := newBrowser(t, base).do(http.MethodGet, "/ui/items", nil)
		if p.status != http.StatusSeeOther || p.header.Get("Location") != "/ui/login" {
			t.Errorf("GET /ui/items without a session: %d %q", p.status, p.header.Get("Location"))
		}
	})
}

// TestConsoleFeedbackNeedsItsToken: a verdict without the session's CSRF
// token, or with another session's, is refused before anything is read.
func TestConsoleFeedbackNeedsItsToken(t *testing.T) {
	base := newAuthStack(t).serve(t)
	b := newBrowser(t, base)
	b.login(healerKey)
	other := newBrowser(t, base)
	other.login(healerKey)
	for _, tc := range []struct {
		name string
		csrf string
	}{
		{"no token", ""},
		{"another session's token", other.csrf("/ui/pack")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			form := url.Values{"pack": {"cp_x"}, "verdict": {"useful"}}
			if tc.csrf != "" {
				form.Set("csrf", tc.csrf)
			}
			p := b.do(http.MethodPost, "/ui/packs/feedback", form)
			if p.status != http.StatusForbidden || !strings.Contains(p.body, "csrf") {
				t.Errorf("POST /ui/packs/feedback: %d %.300s", p.status, p.body)
			}
		})
	}
	t.Run("with its token, the verdict goes on to the feedback service", func(t *testing.T) {
		p := b.do(http.MethodPost, "/ui/packs/feedback", url.Values{"csrf": {b.csrf("/ui/pack")}, "pack": {"cp_x"}, "verdict": {"useful"}})
		if p.status != http.StatusNotFound { // this stack has none: not found, as POST /feedback answers
			t.Errorf("POST /ui/packs/feedback: %d %.300s", p.status, p.body)
		}
	})
}

// TestConsoleBenchCharts: a chart is served as SVG under a policy that
// sandboxes it; nothing but an embedded chart is served.
func TestConsoleBenchCharts(t *testing.T) {
	base := newAuthStack(t).serve(t)
	b := newBrowser(t, base)
	b.login(healerKey)
	index := b.do(http.MethodGet, "/ui/bench", nil)
	i := strings.Index(index.body, `<img src="/ui/bench/`)
	if i < 0 {
		t.Fatalf("the benchmark page shows no chart: %.500s", index.body)
	}
	src := index.body[i+len(`<img src="`):]
	src = src[:strings.IndexByte(src, '"')]
	p := b.do(http.MethodGet, src, nil)
	if p.status != http.StatusOK || p.header.Get("Content-Type") != "image/svg+xml" ||
		!strings.Contains(p.header.Get("Content-Security-Policy"), "sandbox") || p.header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("GET %s: %d %q %q", src, p.status, p.header.Get("Content-Type"), p.header.Get("Content-Security-Policy"))
	}
	for _, bad := range []string{"/ui/bench/2026-11-21~..~..~console.go.svg", "/ui/bench/..%2Fconsole.js", "/ui/bench/layout.html", "/ui/bench/2026-11-21~latency-sqlite.md"} {
		if p := b.do(http.MethodGet, bad, nil); p.status != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", bad, p.status)
		}
	}
}
