package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/auth"
	"github.com/h4r/h4r/tenant"
)

// TestServeTenants runs h4r serve's wiring with two tenants besides the
// default one, over the same ids and words, and checks what each key
// gets: its own tenant's items, never another's; the operator's header;
// the quotas; the webhook's per-tenant secret; and h4r tenants delete.
func TestServeTenants(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	keysPath := filepath.Join(dir, "keys.json")
	var entries []string
	for _, k := range []struct{ key, extra string }{
		{"acme-key", `, "tenant": "acme"`}, {"beta-key", `, "tenant": "beta"`}, {"default-key", ""}, {"operator-key", `, "operator": true`},
	} {
		sum := sha256.Sum256([]byte(k.key))
		entries = append(entries, fmt.Sprintf(`{"sha256": %q, "principal": {"id": %q, "securityLevel": "restricted"}, "routes": ["read", "ingest", "admin"]%s}`,
			hex.EncodeToString(sum[:]), strings.ReplaceAll(k.key, "-", "_"), k.extra))
	}
	if err := os.WriteFile(keysPath, []byte("["+strings.Join(entries, ",")+"]"), 0o600); err != nil {
		t.Fatal(err)
	}
	secretPath := filepath.Join(dir, "acme-secret")
	if err := os.WriteFile(secretPath, []byte("acme-webhook-secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"H4R_DATA_DIR": filepath.Join(dir, "data"), "H4R_API_KEYS_FILE": keysPath, "H4R_LOG_LEVEL": "error",
		"H4R_TENANTS_FILE": filepath.Join(dir, "tenants.json"), "H4R_GITHUB_WEBHOOK_SECRET": "default-webhook-secret",
		"H4R_REQUEST_TIMEOUT_MS": "60000", "H4R_GENERATOR_TIMEOUT_MS": "60000"}
	var out, errb bytes.Buffer
	for _, args := range [][]string{
		{"create", "acme", "--max-items", "3", "--webhook-secret-file", secretPath},
		{"create", "beta"},
	} {
		if err := cmdTenants(ctx, args, &out, &errb, env(vars)); err != nil {
			t.Fatalf("h4r tenants %v: %v %s", args, err, errb.String())
		}
	}
	out.Reset()
	if err := cmdTenants(ctx, []string{"list"}, &out, &errb, env(vars)); err != nil || out.String() != "default\nacme\nbeta\n" {
		t.Fatalf("h4r tenants list: %q %v", out.String(), err)
	}
	cfg, err := app.LoadConfig(env(vars))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := auth.Load(keysPath)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := openService(ctx, cfg, keys, false, false, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(svc.handler)
	do := func(key, method, path, body string, header ...string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	for _, tc := range []struct{ key, owner string }{{"acme-key", "acme"}, {"beta-key", "beta"}, {"default-key", "house"}} {
		if code, body := do(tc.key, "POST", "/v1/items", `{"items": [
			{"id": "x1", "text": "quartz rollback pipeline, `+tc.owner+`'s note"},
			{"id": "x2", "text": "quartz deploy checklist, `+tc.owner+`'s note"}]}`); code != 200 {
			t.Fatalf("ingest as %s: %d %s", tc.key, code, body)
		}
	}
	others := map[string][]string{"acme-key": {"beta", "house"}, "beta-key": {"acme", "house"}, "default-key": {"acme", "beta"}}
	for key, forbidden := range others {
		for _, path := range []string{"/v1/items/x1", "/v1/items/x2"} {
			code, body := do(key, "GET", path, "")
			for _, f := range forbidden {
				if code != 200 || strings.Contains(body, f+"'s") {
					t.Errorf("GET %s as %s: %d %s (must be its own tenant's)", path, key, code, body)
				}
			}
		}
		code, body := do(key, "POST", "/v1/context-pack", `{"query": {"type": "keyword", "text": "quartz rollback pipeline"}}`)
		if code != 200 || !strings.Contains(body, `"x1"`) {
			t.Errorf("pack as %s: %d %.300s", key, code, body)
		}
		for _, f := range forbidden {
			if strings.Contains(body, f+"'s") {
				t.Errorf("pack as %s holds %s's items: %.500s", key, f, body)
			}
		}
	}
	for _, tc := range []struct {
		name, key, method, path, body string
		header                        []string
		want                          int
		wantIn                        string
	}{
		{"the operator names beta", "operator-key", "GET", "/v1/items/x1", "", []string{tenant.Header, "beta"}, 200, "beta's"},
		{"the operator without header reads the default", "operator-key", "GET", "/v1/items/x1", "", nil, 200, "house's"},
		{"a tenant key naming another tenant", "acme-key", "GET", "/v1/items/x1", "", []string{tenant.Header, "beta"}, 400, "operator keys"},
		{"acme's quota of 3 items", "acme-key", "POST", "/v1/items", `{"items": [{"id": "x3", "text": "a"}, {"id": "x4", "text": "b"}]}`, nil, 429, "quota of 3 items"},
		{"replacing within the quota", "acme-key", "POST", "/v1/items", `{"items": [{"id": "x1", "text": "quartz rollback pipeline, acme's note, again"}]}`, nil, 200, "x1"},
		{"beta has no quota", "beta-key", "POST", "/v1/items", `{"items": [{"id": "x3", "text": "a"}, {"id": "x4", "text": "b"}]}`, nil, 200, "x4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := do(tc.key, tc.method, tc.path, tc.body, tc.header...)
			if code != tc.want || !strings.Contains(body, tc.wantIn) {
				t.Errorf("%d %.400s; want %d with %q", code, body, tc.want, tc.wantIn)
			}
		})
	}
	// The webhook: acme's deliveries are checked with acme's secret; beta
	// has none, so refuses every delivery.
	ping := `{"zen": "Keep it logically awesome.", "hook_id": 1}`
	sign := func(secret string) string {
		m := hmac.New(sha256.New, []byte(secret))
		m.Write([]byte(ping))
		return "sha256=" + hex.EncodeToString(m.Sum(nil))
	}
	for _, tc := range []struct {
		name, query, secret string
		ok                  bool
	}{
		{"acme's secret to acme", "?tenant=acme", "acme-webhook-secret", true},
		{"the default's secret to acme", "?tenant=acme", "default-webhook-secret", false},
		{"acme's secret to the default", "", "acme-webhook-secret", false},
		{"the default's secret to the default", "", "default-webhook-secret", true},
		{"acme's secret to beta, which has none", "?tenant=beta", "acme-webhook-secret", false},
	} {
		t.Run("webhook "+tc.name, func(t *testing.T) {
			code, body := do("", "POST", "/webhook/github"+tc.query, ping, "X-GitHub-Event", "ping", "X-GitHub-Delivery", "d-1", "X-Hub-Signature-256", sign(tc.secret))
			if (code == 200) != tc.ok {
				t.Errorf("%d %s; want accepted=%v", code, body, tc.ok)
			}
		})
	}
	ts.Close()
	svc.close(quietLog())

	out.Reset()
	if err := cmdTenants(ctx, []string{"delete", "beta"}, &out, &errb, env(vars)); err == nil {
		t.Error("h4r tenants delete without --yes deleted")
	}
	out.Reset()
	if err := cmdTenants(ctx, []string{"delete", "beta", "--yes"}, &out, &errb, env(vars)); err != nil {
		t.Fatal(err)
	}
	var removed struct {
		Tenant string `json:"tenant"`
		Items  int    `json:"items"`
		Bytes  int64  `json:"bytes"`
	}
	if err := json.Unmarshal(out.Bytes(), &removed); err != nil || removed.Tenant != "beta" || removed.Items != 4 || removed.Bytes <= 0 {
		t.Errorf("h4r tenants delete beta said %q (%v); want 4 items and their bytes", out.String(), err)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "tenants", "beta")); !os.IsNotExist(err) {
		t.Errorf("beta's directory is still there: %v", err)
	}
	out.Reset()
	if err := cmdTenants(ctx, []string{"list"}, &out, &errb, env(vars)); err != nil || out.String() != "default\nacme\n" {
		t.Errorf("h4r tenants list after the delete: %q %v", out.String(), err)
	}
}

// TestTenantKeysNeedTheirTenant: a key of a tenant is never served as
// another tenant's: h4r serve without a tenants file refuses to start,
// and h4r mcp refuses a key of another tenant than H4R_TENANT.
func TestTenantKeysNeedTheirTenant(t *testing.T) {
	dir := t.TempDir()
	keysPath := filepath.Join(dir, "keys.json")
	sum := sha256.Sum256([]byte("acme-key"))
	if err := os.WriteFile(keysPath, []byte(fmt.Sprintf(`[{"sha256": %q, "principal": {"id": "acme_reader"}, "routes": ["read"], "tenant": "acme"}]`, hex.EncodeToString(sum[:]))), 0o600); err != nil {
		t.Fatal(err)
	}
	keys, err := auth.Load(keysPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := app.LoadConfig(env(map[string]string{"H4R_API_KEYS_FILE": keysPath, "H4R_MCP_API_KEY": "acme-key"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := servedTenants(cfg, keys); err == nil || !strings.Contains(err.Error(), "H4R_TENANTS_FILE") {
		t.Errorf("serving a tenant's key without tenants: %v", err)
	}
	for _, tc := range []struct {
		tenant string
		ok     bool
	}{{"", false}, {"default", false}, {"beta", false}, {"acme", true}} {
		cfg.Tenant = tc.tenant
		if _, err := mcpCaller(cfg); (err == nil) != tc.ok {
			t.Errorf("h4r mcp for tenant %q with acme's key: %v, want ok=%v", tc.tenant, err, tc.ok)
		}
	}
}
