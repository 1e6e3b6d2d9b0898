package tenant_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r/auth"
	"github.com/h4r/h4r/internal/syncbuf"
	"github.com/h4r/h4r/tenant"
)

// keysFile is a keys file: a key of tenant acme, one of tenant beta, one
// of the default tenant and an operator key.
func keysFile(t testing.TB) *auth.Keys {
	t.Helper()
	entry := func(key, extra string) string {
		sum := sha256.Sum256([]byte(key))
		return fmt.Sprintf(`{"sha256": %q, "principal": {"id": %q}, "routes": ["read"]%s}`, hex.EncodeToString(sum[:]), key, extra)
	}
	k, err := auth.Parse([]byte("[" + strings.Join([]string{
		entry("acme-key", `, "tenant": "acme"`), entry("beta-key", `, "tenant": "beta"`),
		entry("default-key", ""), entry("operator-key", `, "operator": true`),
	}, ",") + "]"))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// tenantsServers answer with their tenant's name.
func tenantsServers(names ...string) map[string]http.Handler {
	hs := map[string]http.Handler{}
	for _, n := range names {
		hs[n] = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body := new(bytes.Buffer)
			_, _ = body.ReadFrom(r.Body)
			fmt.Fprintf(w, "tenant=%s body=%s", n, body)
		})
	}
	return hs
}

func TestRouterResolvesTheTenant(t *testing.T) {
	var logs syncbuf.Buffer
	r, err := tenant.NewRouter(keysFile(t), tenantsServers("default", "acme", "beta"),
		tenant.WithRouterLogger(slog.New(slog.NewTextHandler(&logs, nil))), tenant.WithSignedRoute("/webhook/github"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, method, path, key, header, cookie string
		form                                    url.Values
		wantStatus                              int
		want                                    string // the answering tenant, or a word of the error
	}{
		{name: "a tenant key reaches its tenant", key: "acme-key", wantStatus: 200, want: "tenant=acme"},
		{name: "another tenant key reaches its own", key: "beta-key", wantStatus: 200, want: "tenant=beta"},
		{name: "a key without tenant reaches the default", key: "default-key", wantStatus: 200, want: "tenant=default"},
		{name: "no key reaches the default, which asks for one", wantStatus: 200, want: "tenant=default"},
		{name: "an unknown key reaches the default, which refuses it", key: "stolen-key", header: "acme", wantStatus: 200, want: "tenant=default"},
		{name: "a tenant key naming another tenant is refused", key: "acme-key", header: "beta", wantStatus: 400, want: "operator keys"},
		{name: "a tenant key naming its own tenant is refused too", key: "acme-key", header: "acme", wantStatus: 400, want: "operator keys"},
		{name: "a default key naming a tenant is refused", key: "default-key", header: "acme", wantStatus: 400, want: "operator keys"},
		{name: "a header without a key is refused", header: "acme", wantStatus: 401, want: "operator key"},
		{name: "an operator key names the tenant", key: "operator-key", header: "beta", wantStatus: 200, want: "tenant=beta"},
		{name: "an operator key without header reaches the default", key: "operator-key", wantStatus: 200, want: "tenant=default"},
		{name: "an operator key naming no tenant", key: "operator-key", header: "gamma", wantStatus: 404, want: "no tenant"},
		{name: "a signed route goes to the tenant of its query", method: "POST", path: "/webhook/github?tenant=acme", wantStatus: 200, want: "tenant=acme"},
		{name: "a signed route to an unknown tenant goes to the default", method: "POST", path: "/webhook/github?tenant=gamma", wantStatus: 200, want: "tenant=default"},
		{name: "the tenant query is ignored elsewhere", path: "/v1/items/x?tenant=acme", wantStatus: 200, want: "tenant=default"},
		{name: "a console login goes to the key's tenant, body intact", method: "POST", path: "/ui/login", form: url.Values{"key": {"beta-key"}, "csrf": {"t"}}, wantStatus: 200, want: "tenant=beta body=csrf=t&key=beta-key"},
		{name: "a console login with an unknown key goes to the default", method: "POST", path: "/ui/login", form: url.Values{"key": {"nope"}}, wantStatus: 200, want: "tenant=default"},
		{name: "console pages follow the routing cookie", path: "/ui/pack", cookie: "acme", wantStatus: 200, want: "tenant=acme"},
		{name: "a cookie naming no tenant goes to the default", path: "/ui/pack", cookie: "gamma", wantStatus: 200, want: "tenant=default"},
		{name: "the cookie does not route the API", path: "/v1/items/x", cookie: "acme", wantStatus: 200, want: "tenant=default"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method, path := tc.method, tc.path
			if method == "" {
				method = "GET"
			}
			if path == "" {
				path = "/v1/context-pack"
			}
			var body *strings.Reader
			if tc.form != nil {
				body = strings.NewReader(tc.form.Encode())
			} else {
				body = strings.NewReader("")
			}
			req := httptest.NewRequest(method, path, body)
			if tc.form != nil {
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
			if tc.key != "" {
				req.Header.Set("Authorization", "Bearer "+tc.key)
			}
			if tc.header != "" {
				req.Header.Set(tenant.Header, tc.header)
			}
			if tc.cookie != "" {
				req.AddCookie(&http.Cookie{Name: tenant.Cookie, Value: tc.cookie})
			}
			w := httptest.NewRecorder()
			r.ServeHTTP(w, req)
			if w.Code != tc.wantStatus || !strings.Contains(w.Body.String(), tc.want) {
				t.Errorf("%d %s; want %d with %q", w.Code, w.Body, tc.wantStatus, tc.want)
			}
			if tc.wantStatus >= 400 && strings.Contains(w.Body.String(), "tenant=") {
				t.Errorf("a refused request reached a tenant: %s", w.Body)
			}
		})
	}
	if !strings.Contains(logs.String(), "operator request for a tenant") || !strings.Contains(logs.String(), "tenant=beta") {
		t.Errorf("the operator's request for a tenant is not logged: %s", logs.String())
	}
}

func TestRouterRequestQuota(t *testing.T) {
	now := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	r, err := tenant.NewRouter(keysFile(t), tenantsServers("default", "acme", "beta"),
		tenant.WithRequestQuota("acme", 2), tenant.WithRouterClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	do := func(key string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", "/v1/context-pack", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		return w
	}
	for i := range 2 {
		if w := do("acme-key"); w.Code != 200 {
			t.Fatalf("request %d of acme within its quota: %d %s", i, w.Code, w.Body)
		}
	}
	w := do("acme-key")
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), "quota of 2 requests per minute") {
		t.Errorf("acme's third request: %d %v %s; want 429 with Retry-After and the quota", w.Code, w.Header(), w.Body)
	}
	if w := do("beta-key"); w.Code != 200 {
		t.Errorf("beta is limited by acme's quota: %d %s", w.Code, w.Body)
	}
	now = now.Add(time.Minute)
	if w := do("acme-key"); w.Code != 200 {
		t.Errorf("acme a minute later: %d %s", w.Code, w.Body)
	}
}

func TestNewRouterRefuses(t *testing.T) {
	if _, err := tenant.NewRouter(nil, tenantsServers("default", "acme")); err == nil {
		t.Error("a router without keys was built")
	}
	if _, err := tenant.NewRouter(keysFile(t), tenantsServers("default", "acme")); err == nil || !strings.Contains(err.Error(), "beta") {
		t.Errorf("a key of an unlisted tenant: %v", err)
	}
	if _, err := tenant.NewRouter(keysFile(t), tenantsServers("acme", "beta")); err == nil {
		t.Error("a router without the default tenant was built")
	}
}

func TestScopedKnowsOnlyItsTenantsKeys(t *testing.T) {
	keys := keysFile(t)
	for _, tc := range []struct {
		tenant, key string
		want        bool
	}{
		{"acme", "acme-key", true},
		{"acme", "beta-key", false},
		{"acme", "default-key", false},
		{"acme", "operator-key", true},
		{"default", "default-key", true},
		{"default", "acme-key", false},
		{"beta", "nope", false},
	} {
		t.Run(tc.tenant+"/"+tc.key, func(t *testing.T) {
			if _, ok := tenant.Scoped(keys, tc.tenant).Authenticate(tc.key); ok != tc.want {
				t.Errorf("authenticated = %v, want %v", ok, tc.want)
			}
		})
	}
}
