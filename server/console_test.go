package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/auth"
	"github.com/h4r/h4r/server"
)

// browser is a console client: a cookie jar, no redirects followed.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newBrowser(t *testing.T, base string) *browser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, base: base, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type page struct {
	status int
	header http.Header
	body   string
}

func (b *browser) do(method, path string, form url.Values, header ...string) page {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return page{resp.StatusCode, resp.Header, string(raw)}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf reads the token of the page's first form.
func (b *browser) csrf(path string) string {
	b.t.Helper()
	p := b.do(http.MethodGet, path, nil)
	m := csrfField.FindStringSubmatch(p.body)
	if m == nil {
		b.t.Fatalf("GET %s (%d) has no CSRF field", path, p.status)
	}
	return m[1]
}

func (b *browser) login(key string) {
	b.t.Helper()
	p := b.do(http.MethodPost, "/ui/login", url.Values{"csrf": {b.csrf("/ui/login")}, "key": {key}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/ui/pack" {
		b.t.Fatalf("login: %d %q", p.status, p.header.Get("Location"))
	}
}

func consoleQuery(csrf string) url.Values {
	return url.Values{"csrf": {csrf}, "text": {"login test failures with selector issues"}, "type": {"hybrid"}, "limit": {"10"}}
}

var dataIDs = regexp.MustCompile(`<article class="item" id="item-[^"]*" data-id="([^"]+)"|<tr data-id="([^"]+)" data-reason="([^"]+)"`)

// shown returns the kept ids and the left-out ids by reason of a playground page.
func shown(body string) (kept []string, left map[string]string) {
	left = map[string]string{}
	for _, m := range dataIDs.FindAllStringSubmatch(body, -1) {
		if m[1] != "" {
			kept = append(kept, m[1])
		} else {
			left[m[2]] = m[3]
		}
	}
	return kept, left
}

// TestConsoleSession checks the login: the cookies' attributes, no session
// before login (the login form's token is not a session's), the key never
// in a URL or cookie, and the pages closed to a browser without a session.
func TestConsoleSession(t *testing.T) {
	base := newAuthStack(t).serve(t)
	b := newBrowser(t, base)
	if p := b.do(http.MethodGet, "/ui/pack", nil); p.status != http.StatusSeeOther || p.header.Get("Location") != "/ui/login" {
		t.Fatalf("the playground without a session: %d %q, want 303 to /ui/login", p.status, p.header.Get("Location"))
	}
	p := b.do(http.MethodGet, "/ui/login", nil)
	checkCookie(t, "login", setCookie(p.header, "h4r_console_login"))
	if csp := p.header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
	if strings.Contains(p.body, "<script>") {
		t.Error("the login page has an inline script")
	}
	pre := csrfField.FindStringSubmatch(p.body)[1]
	if r := b.do(http.MethodPost, "/ui/pack", consoleQuery(pre)); r.status != http.StatusSeeOther {
		t.Errorf("the login form's token as a session: %d, want 303 to the login", r.status)
	}
	if r := b.do(http.MethodPost, "/ui/login", url.Values{"csrf": {pre}, "key": {"guess"}}); r.status != http.StatusUnauthorized {
		t.Errorf("login with an unknown key: %d, want 401", r.status)
	}
	r := b.do(http.MethodPost, "/ui/login", url.Values{"csrf": {pre}, "key": {healerKey}})
	if r.status != http.StatusSeeOther {
		t.Fatalf("login: %d", r.status)
	}
	session := setCookie(r.header, "h4r_console")
	checkCookie(t, "session", session)
	if strings.Contains(strings.Join(r.header.Values("Set-Cookie"), " ")+r.header.Get("Location"), healerKey) {
		t.Error("the key is in a cookie or the redirect")
	}
	if p := b.do(http.MethodGet, "/ui/pack", nil); p.status != http.StatusOK || !strings.Contains(p.body, "playwright_healer") {
		t.Errorf("the playground after login: %d", p.status)
	}
	if p := b.do(http.MethodPost, "/ui/logout", url.Values{"csrf": {b.csrf("/ui/pack")}}); p.status != http.StatusSeeOther {
		t.Errorf("logout: %d", p.status)
	}
	if p := b.do(http.MethodGet, "/ui/pack", nil); p.status != http.StatusSeeOther {
		t.Errorf("the playground after logout: %d, want 303", p.status)
	}
	// The old session id is worth nothing once signed out.
	replay := newBrowser(t, base)
	if p := replay.do(http.MethodGet, "/ui/pack", nil, "Cookie", cookieValue(session)); p.status != http.StatusSeeOther {
		t.Errorf("the signed-out session id replayed: %d, want 303", p.status)
	}
}

// setCookie returns the Set-Cookie header that sets name.
func setCookie(h http.Header, name string) string {
	for _, v := range h.Values("Set-Cookie") {
		if strings.HasPrefix(v, name+"=") {
			return v
		}
	}
	return ""
}

func checkCookie(t *testing.T, what, ck string) {
	t.Helper()
	if ck == "" {
		t.Errorf("no %s cookie set", what)
	}
	for _, attr := range []string{"HttpOnly", "SameSite=Strict", "Path=/ui"} {
		if !strings.Contains(ck, attr) {
			t.Errorf("%s cookie %q lacks %s", what, ck, attr)
		}
	}
}

func cookieValue(setCookie string) string {
	v, _, _ := strings.Cut(setCookie, ";")
	return v
}

// TestConsoleRefusesWritesWithoutToken checks that every form refuses a
// POST without the session's CSRF token, with another's, or from another
// origin, and builds no pack then.
func TestConsoleRefusesWritesWithoutToken(t *testing.T) {
	base := newAuthStack(t).serve(t)
	b := newBrowser(t, base)
	b.login(adminKey)
	other := newBrowser(t, base)
	other.login(adminKey)
	token := b.csrf("/ui/pack")
	tests := []struct {
		name   string
		path   string
		form   url.Values
		header []string
		status int
	}{
		{"pack without a token", "/ui/pack", consoleQuery(""), nil, http.StatusForbidden},
		{"pack with another session's token", "/ui/pack", consoleQuery(other.csrf("/ui/pack")), nil, http.StatusForbidden},
		{"pack from another origin", "/ui/pack", consoleQuery(token), []string{"Origin", "https://evil.example"}, http.StatusForbidden},
		{"dry-run without a token", "/ui/dryrun", consoleQuery(""), nil, http.StatusForbidden},
		{"logout without a token", "/ui/logout", url.Values{}, nil, http.StatusForbidden},
		{"login without a token", "/ui/login", url.Values{"key": {adminKey}}, nil, http.StatusForbidden},
		{"pack with its token", "/ui/pack", consoleQuery(token), nil, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := b.do(http.MethodPost, tt.path, tt.form, tt.header...)
			if p.status != tt.status {
				t.Fatalf("status %d, want %d", p.status, tt.status)
			}
			kept, _ := shown(p.body)
			if tt.status != http.StatusOK && len(kept) > 0 {
				t.Errorf("a refused form built a pack: %v", kept)
			}
			if tt.status == http.StatusOK && len(kept) == 0 {
				t.Error("the pack shows no item")
			}
		})
	}
	// The refused logout left the session signed in.
	if p := b.do(http.MethodGet, "/ui/pack", nil); p.status != http.StatusOK {
		t.Errorf("after the refused logout: %d, want 200", p.status)
	}
}

// TestConsoleShowsWhatTheAPIShows checks that the playground shows a key
// the items, and the left-out items with their reasons, that the API's
// pack gives the same key: no more (a hidden item's id or content) and no
// fewer.
func TestConsoleShowsWhatTheAPIShows(t *testing.T) {
	base := newAuthStack(t).serve(t)
	tests := []struct {
		name    string
		key     string
		never   []string // in no byte of the page
		leftOut map[string]string
	}{
		{"a read key without the audit class", healerKey, []string{"mem-ops", "OPS-ONLY-RUNBOOK", "mem-sensitive", "CONFIDENTIAL-INCIDENT-NOTE", "sk-live-TOPSECRET", "jane.doe@example.com"}, nil},
		{"a key with the audit class", auditKey, []string{"OPS-ONLY-RUNBOOK", "CONFIDENTIAL-INCIDENT-NOTE", "sk-live-TOPSECRET", "jane.doe@example.com"}, map[string]string{"mem-ops": "policy", "mem-sensitive": "policy"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBrowser(t, base)
			b.login(tt.key)
			p := b.do(http.MethodPost, "/ui/pack", consoleQuery(b.csrf("/ui/pack")))
			if p.status != http.StatusOK {
				t.Fatalf("status %d: %s", p.status, p.body)
			}
			for _, s := range tt.never {
				if strings.Contains(p.body, s) {
					t.Errorf("the page shows %q", s)
				}
			}
			api := post(t, base+"/v1/context-pack", `{"query": {"type": "hybrid", "text": "login test failures with selector issues"}, "limit": 10, "include_scores": true, "include_graph": true, "explain": "all"}`, bearer(tt.key)...)
			var pack h4r.Pack
			if err := json.Unmarshal(api.body, &pack); err != nil {
				t.Fatal(err)
			}
			var wantKept []string
			for _, r := range pack.Results {
				wantKept = append(wantKept, r.ID)
			}
			wantLeft := map[string]string{}
			for _, e := range pack.Explainability.Items {
				if e.Reason != h4r.ReasonKept {
					wantLeft[e.ID] = e.Reason
				}
			}
			kept, left := shown(p.body)
			if !slices.Equal(kept, wantKept) {
				t.Errorf("kept %v, the API keeps %v", kept, wantKept)
			}
			if len(left) != len(wantLeft) {
				t.Errorf("left out %v, the API names %v", left, wantLeft)
			}
			for id, reason := range wantLeft {
				if left[id] != reason {
					t.Errorf("left-out %s: %q, the API says %q", id, left[id], reason)
				}
			}
			for id, reason := range tt.leftOut {
				if left[id] != reason {
					t.Errorf("left-out %s: %q, want %q", id, left[id], reason)
				}
			}
			if n := strings.Count(p.body, "<meter "); n != 8*len(kept) {
				t.Errorf("%d signal bars for %d kept items, want 8 each", n, len(kept))
			}
		})
	}
}

// TestConsoleDryRun checks that the dry-run needs the audit class and
// names the items policy gives one specialist and not the other.
func TestConsoleDryRun(t *testing.T) {
	base := newAuthStack(t).serve(t)
	reader := newBrowser(t, base)
	reader.login(healerKey)
	if p := reader.do(http.MethodGet, "/ui/dryrun", nil); p.status != http.StatusForbidden {
		t.Errorf("dry-run for a key without the audit class: %d, want 403", p.status)
	}
	if p := reader.do(http.MethodGet, "/ui/pack", nil); strings.Contains(p.body, `href="/ui/dryrun"`) {
		t.Error("the menu offers the dry-run to a key without the audit class")
	}
	admin := newBrowser(t, base)
	admin.login(adminKey)
	form := consoleQuery(admin.csrf("/ui/dryrun"))
	form.Set("a_level", "restricted")
	form.Set("a_groups", "qa,ops")
	form.Set("b_level", "public")
	form.Set("b_groups", "")
	p := admin.do(http.MethodPost, "/ui/dryrun", form)
	if p.status != http.StatusOK {
		t.Fatalf("dry-run: %d %s", p.status, p.body)
	}
	rows := regexp.MustCompile(`<tr data-id="([^"]+)" data-cause="([^"]+)"`).FindAllStringSubmatch(p.body, -1)
	causes := map[string]string{}
	for _, r := range rows {
		causes[r[1]] = r[2]
	}
	for _, id := range []string{"mem-ops", "mem-qa"} {
		if causes[id] != "policy" {
			t.Errorf("dry-run: %s differs by %q, want policy (rows %v)", id, causes[id], causes)
		}
	}
	// A side may narrow the key, never widen it.
	form.Set("b_groups", "qa,security")
	if p := admin.do(http.MethodPost, "/ui/dryrun", form); p.status != http.StatusForbidden {
		t.Errorf("dry-run with a group the key lacks: %d, want 403", p.status)
	}
}

// TestConsoleWithoutKeys checks the keyless console: loopback names only,
// no foreign origin, and the specialist from the form as the API takes it.
func TestConsoleWithoutKeys(t *testing.T) {
	base := newStack(t).serve(t)
	b := newBrowser(t, base)
	if p := b.do(http.MethodGet, "/ui/pack", nil, "Host", "rebound.example:80"); p.status != http.StatusForbidden {
		t.Errorf("a page by a non-loopback name: %d, want 403", p.status)
	}
	token := b.csrf("/ui/pack")
	form := consoleQuery(token)
	form.Set("spec_id", "playwright_healer")
	form.Set("spec_level", "internal")
	form.Set("spec_groups", "qa")
	if p := b.do(http.MethodPost, "/ui/pack", form, "Origin", "http://evil.example"); p.status != http.StatusForbidden {
		t.Errorf("a form from a foreign origin: %d, want 403", p.status)
	}
	p := b.do(http.MethodPost, "/ui/pack", form)
	kept, _ := shown(p.body)
	if p.status != http.StatusOK || !slices.Contains(kept, "mem-qa") || slices.Contains(kept, "mem-ops") {
		t.Errorf("keyless pack for qa: %d, kept %v", p.status, kept)
	}
	if p := b.do(http.MethodGet, "/ui/dryrun", nil); p.status != http.StatusForbidden {
		t.Errorf("dry-run without anonymous audit: %d, want 403", p.status)
	}
}

// TestConsoleCookiesSecureOverTLS checks that the cookies are Secure when
// the console is reached over TLS, and only then (a browser would not send
// a Secure cookie back over plain HTTP on loopback).
func TestConsoleCookiesSecureOverTLS(t *testing.T) {
	s := newAuthStack(t)
	tests := []struct {
		name   string
		tls    bool
		secure bool
	}{
		{"over TLS", true, true},
		{"over plain HTTP", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := httptest.NewUnstartedServer(s.srv.Handler())
			if tt.tls {
				ts.StartTLS()
			} else {
				ts.Start()
			}
			t.Cleanup(ts.Close)
			b := newBrowser(t, ts.URL)
			b.c.Transport = ts.Client().Transport
			login := b.do(http.MethodGet, "/ui/login", nil)
			r := b.do(http.MethodPost, "/ui/login", url.Values{"csrf": {csrfField.FindStringSubmatch(login.body)[1]}, "key": {healerKey}})
			for name, ck := range map[string]string{"login": setCookie(login.header, "h4r_console_login"), "session": setCookie(r.header, "h4r_console")} {
				if got := strings.Contains(ck, "; Secure"); got != tt.secure {
					t.Errorf("%s cookie %q: Secure %v, want %v", name, ck, got, tt.secure)
				}
			}
		})
	}
}

// revocable is an Authenticator whose keys can all be withdrawn, as a
// reloaded keys file withdraws a key.
type revocable struct {
	keys    server.Authenticator
	revoked atomic.Bool
}

func (r *revocable) Authenticate(key string) (*auth.Principal, bool) {
	if r.revoked.Load() {
		return nil, false
	}
	return r.keys.Authenticate(key)
}

// TestConsoleRevokedKeyEndsSession checks that the key is authenticated
// again on every page: once the server no longer accepts it, its session
// shows nothing and sends the browser to the login.
func TestConsoleRevokedKeyEndsSession(t *testing.T) {
	keys, err := auth.Load("testdata/keys.json")
	if err != nil {
		t.Fatal(err)
	}
	rv := &revocable{keys: keys}
	base := newStack(t, server.WithAuthenticator(rv), server.WithClock(clock)).serve(t)
	b := newBrowser(t, base)
	b.login(healerKey)
	token := b.csrf("/ui/pack")
	rv.revoked.Store(true)
	p := b.do(http.MethodPost, "/ui/pack", consoleQuery(token))
	if kept, _ := shown(p.body); p.status != http.StatusSeeOther || len(kept) > 0 {
		t.Errorf("a pack for a withdrawn key: %d, %d items, want 303 to the login", p.status, len(kept))
	}
}
