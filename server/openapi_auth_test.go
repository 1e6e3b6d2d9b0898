package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestOpenAPIDescribesAuthentication checks, route by route over the real
// router, that what /openapi.json says about keys is what the handlers
// do: a route that answers 401 without a key documents 401 (and no
// "security": [] override); a public route answers without a key and says
// so; a rate-limited route documents 429.
func TestOpenAPIDescribesAuthentication(t *testing.T) {
	s := newAuthStack(t)
	base := s.serve(t)
	var doc struct {
		Security []map[string][]string                 `json:"security"`
		Paths    map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(do(t, http.MethodGet, base+"/openapi.json", nil, bearer(publicKey)...).body, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Security) != 1 || doc.Security[0]["bearer"] == nil {
		t.Fatalf("the document's default security is %v, want bearer", doc.Security)
	}
	for _, route := range s.srv.Routes() {
		t.Run(route, func(t *testing.T) {
			method, path, _ := strings.Cut(route, " ")
			var op struct {
				Security  *[]map[string][]string     `json:"security"`
				Responses map[string]json.RawMessage `json:"responses"`
			}
			raw, ok := doc.Paths[path][strings.ToLower(method)]
			if !ok {
				t.Fatal("not documented") // TestOpenAPIParity says more
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatal(err)
			}
			public, limited := s.srv.RouteAccess(route)
			r := do(t, method, base+strings.ReplaceAll(path, "{id}", "mem-root"), nil)
			if public {
				if r.status == http.StatusUnauthorized {
					t.Errorf("a public route answered 401")
				}
				if op.Security == nil || len(*op.Security) != 0 {
					t.Errorf(`a public route without "security": []`)
				}
				return
			}
			if r.status != http.StatusUnauthorized {
				t.Errorf("without a key: status %d, want 401", r.status)
			}
			if op.Security != nil {
				t.Errorf("a route that needs a key overrides security with %v", *op.Security)
			}
			if _, ok := op.Responses["401"]; !ok {
				t.Error("401 is not documented")
			}
			if _, ok := op.Responses["429"]; ok != limited {
				t.Errorf("429 documented %v, rate-limited %v", ok, limited)
			}
		})
	}
}
