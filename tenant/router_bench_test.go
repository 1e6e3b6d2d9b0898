package tenant_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/h4r/h4r/tenant"
)

// BenchmarkRouter is what the router adds to a request: "direct" calls
// a server that does nothing, "routed" the same server through the
// router (the key's hash, the tenant's lookup).
//
//	go test ./tenant -run '^$' -bench Router -count 6 | tee r.txt; benchstat -col /sub r.txt
func BenchmarkRouter(b *testing.B) {
	noop := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	r, err := tenant.NewRouter(keysFile(b), map[string]http.Handler{"default": noop, "acme": noop, "beta": noop})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		h    http.Handler
	}{{"direct", noop}, {"routed", r}} {
		b.Run(bc.name, func(b *testing.B) {
			req := httptest.NewRequest("POST", "/v1/context-pack", nil)
			req.Header.Set("Authorization", "Bearer acme-key")
			w := httptest.NewRecorder()
			b.ReportAllocs()
			for b.Loop() {
				bc.h.ServeHTTP(w, req)
			}
		})
	}
}
