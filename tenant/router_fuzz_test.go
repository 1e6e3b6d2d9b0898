package tenant_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/h4r/h4r/tenant"
)

// FuzzRouterKeepsTenantKeysHome: whatever the header, path, cookie and
// body, a request with a tenant's key reaches that tenant or none.
func FuzzRouterKeepsTenantKeysHome(f *testing.F) {
	f.Add("acme-key", "", "/v1/context-pack", "", "")
	f.Add("acme-key", "beta", "/ui/login", "beta", "key=beta-key")
	f.Add("beta-key", "default", "/webhook/github?tenant=acme", "acme", "")
	f.Add("default-key", "acme", "/ui/pack", "acme", "key=acme-key")
	r, err := tenant.NewRouter(keysFile(f), tenantsServers("default", "acme", "beta"), tenant.WithSignedRoute("/webhook/github"))
	if err != nil {
		f.Fatal(err)
	}
	home := map[string]string{"acme-key": "acme", "beta-key": "beta", "default-key": "default"}
	f.Fuzz(func(t *testing.T, key, header, path, cookie, form string) {
		want, ok := home[key]
		if !ok || !strings.HasPrefix(path, "/") || strings.ContainsAny(path+header+cookie, "\r\n\x00 ") {
			return
		}
		if _, err := url.ParseRequestURI("http://h4r" + path); err != nil {
			return // not a request a client could send
		}
		req := httptest.NewRequest("POST", "http://h4r"+path, strings.NewReader(form))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "Bearer "+key)
		if header != "" {
			req.Header.Set(tenant.Header, header)
		}
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: tenant.Cookie, Value: cookie})
		}
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		if got, reached := strings.CutPrefix(w.Body.String(), "tenant="); reached && !strings.HasPrefix(got, want+" ") {
			t.Errorf("%s with %s=%q, cookie %q: reached %s, want %s or none", key, tenant.Header, header, cookie, got, want)
		}
	})
}
