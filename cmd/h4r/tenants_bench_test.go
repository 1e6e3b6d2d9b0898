package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/auth"
	"github.com/h4r/h4r/demo"
	"github.com/h4r/h4r/tenant"
)

// BenchmarkTenantPack times POST /v1/context-pack in process on the demo
// corpus: "single" is h4r serve without tenants (the default tenant's
// server alone, as before tenants existed); "router-default" and
// "router-tenant" are the same request through the tenant router of a
// service with a second tenant, by a default key and by the tenant's key.
//
//	go test ./cmd/h4r -run '^$' -bench TenantPack -count 6 | tee new.txt; benchstat new.txt
func BenchmarkTenantPack(b *testing.B) {
	queries := []string{
		"login test failures with selector issues", "checkout payment iframe flaky", "CI retries decision",
		"storage state expired session", "visual snapshot header", "staging 502 incident",
	}
	dir := b.TempDir()
	keysPath := filepath.Join(dir, "keys.json")
	var entries []string
	for _, k := range []struct{ key, tenant string }{{"bench-default", ""}, {"bench-acme", "acme"}} {
		sum := sha256.Sum256([]byte(k.key))
		extra := ""
		if k.tenant != "" {
			extra = fmt.Sprintf(`, "tenant": %q`, k.tenant)
		}
		entries = append(entries, fmt.Sprintf(`{"sha256": %q, "principal": {"id": %q, "securityLevel": "restricted"}, "routes": ["read"], "rateLimitPerMinute": 100000000%s}`, hex.EncodeToString(sum[:]), k.key, extra))
	}
	if err := os.WriteFile(keysPath, []byte("["+strings.Join(entries, ",")+"]"), 0o600); err != nil {
		b.Fatal(err)
	}
	open := func(b *testing.B, withTenant bool) http.Handler {
		vars := map[string]string{"H4R_DATA_DIR": b.TempDir(), "H4R_API_KEYS_FILE": keysPath, "H4R_LOG_LEVEL": "error",
			"H4R_REQUEST_TIMEOUT_MS": "60000", "H4R_GENERATOR_TIMEOUT_MS": "60000"}
		cfg, err := app.LoadConfig(env(vars))
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		if withTenant {
			cfg.TenantsFile = filepath.Join(b.TempDir(), "tenants.json")
			reg, err := tenant.Load(cfg.TenantsFile)
			if err != nil {
				b.Fatal(err)
			}
			if err := reg.Add(tenant.Spec{Name: "acme"}); err != nil {
				b.Fatal(err)
			}
		}
		keys, err := auth.Load(keysPath)
		if err != nil {
			b.Fatal(err)
		}
		svc, err := openService(ctx, cfg, keys, false, false, quietLog())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { svc.close(quietLog()) })
		for _, st := range svc.stacks {
			if _, err := demo.LoadIfEmpty(ctx, st.a.Store); err != nil {
				b.Fatal(err)
			}
		}
		return svc.handler
	}
	run := func(b *testing.B, h http.Handler, key string) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			req := httptest.NewRequest("POST", "/v1/context-pack", strings.NewReader(`{"query": {"text": "`+queries[i%len(queries)]+`"}}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+key)
			req.RemoteAddr = "127.0.0.1:1234"
			req.Host = "127.0.0.1"
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != http.StatusOK {
				b.Fatalf("%d %s", w.Code, w.Body)
			}
			i++
		}
	}
	single, routed := open(b, false), open(b, true)
	b.Run("single", func(b *testing.B) { run(b, single, "bench-default") })
	b.Run("router-default", func(b *testing.B) { run(b, routed, "bench-default") })
	b.Run("router-tenant", func(b *testing.B) { run(b, routed, "bench-acme") })
}
