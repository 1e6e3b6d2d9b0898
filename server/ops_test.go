package server_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/h4r/h4r"
)

func TestHealth(t *testing.T) {
	tests := []struct {
		name        string
		closeStore  bool
		readyStatus int
		ready       string
	}{
		{"with the store", false, http.StatusOK, "ready"},
		{"after the store is closed", true, http.StatusServiceUnavailable, "unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStack(t)
			base := s.serve(t)
			if tt.closeStore {
				if err := s.store.Close(); err != nil {
					t.Fatal(err)
				}
			}
			var live, ready struct {
				Status string            `json:"status"`
				Checks map[string]string `json:"checks"`
			}
			for _, probe := range []struct {
				path   string
				status int
				into   any
			}{{"/health/live", http.StatusOK, &live}, {"/health/ready", tt.readyStatus, &ready}} {
				r := do(t, http.MethodGet, base+probe.path, nil)
				if r.status != probe.status {
					t.Fatalf("%s: status %d, want %d: %s", probe.path, r.status, probe.status, r.body)
				}
				if err := json.Unmarshal(r.body, probe.into); err != nil {
					t.Fatalf("%s: %v: %s", probe.path, err, r.body)
				}
			}
			if live.Status != "ok" {
				t.Errorf("live status %q, want ok", live.Status)
			}
			if ready.Status != tt.ready {
				t.Errorf("ready status %q, want %q", ready.Status, tt.ready)
			}
			if store := ready.Checks["store"]; store == "" || (store == "ok") != (tt.ready == "ready") {
				t.Errorf("checks.store %q with ready status %q", store, ready.Status)
			}
		})
	}
}

// TestOpenAPIParity checks that /openapi.json is valid JSON and that the
// (method, path) pairs of its paths are exactly the routes the router
// serves, so that neither can change without the other.
func TestOpenAPIParity(t *testing.T) {
	s := newStack(t)
	base := s.serve(t)
	r := do(t, http.MethodGet, base+"/openapi.json", nil)
	if r.status != http.StatusOK {
		t.Fatalf("status %d", r.status)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q", ct)
	}
	if !json.Valid(r.body) {
		t.Fatal("/openapi.json is not valid JSON")
	}
	var doc struct {
		OpenAPI    string                                `json:"openapi"`
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas struct {
				Error struct {
					Properties struct {
						Code struct {
							Enum []string `json:"enum"`
						} `json:"code"`
					} `json:"properties"`
				} `json:"Error"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(r.body, &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Errorf("openapi %q, want 3.x", doc.OpenAPI)
	}
	methods := []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}
	var documented []string
	for path, item := range doc.Paths {
		for key := range item {
			if slices.Contains(methods, key) {
				documented = append(documented, strings.ToUpper(key)+" "+path)
			}
		}
	}
	slices.Sort(documented)
	served := s.srv.Routes()
	if len(served) == 0 {
		t.Fatal("the router lists no routes")
	}
	if !slices.Equal(documented, served) {
		t.Errorf("openapi.json documents\n  %s\nthe router serves\n  %s", strings.Join(documented, "\n  "), strings.Join(served, "\n  "))
	}
	// The error codes it documents are the fixed set.
	got := slices.Sorted(slices.Values(doc.Components.Schemas.Error.Properties.Code.Enum))
	var want []string
	for c := range codes {
		want = append(want, c)
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("documented error codes %v, want %v", got, want)
	}
}

// TestPanicRecovered checks that a panicking handler answers an internal
// error in the one error shape, without the panic's text, and that the
// server keeps serving.
func TestPanicRecovered(t *testing.T) {
	tests := []struct {
		name   string
		panic  func()
		secret string // text of the panic that must not reach the client
	}{
		{"string", func() { panic("boom: secret-state-1") }, "secret-state-1"},
		{"error", func() { panic(errors.New("db password secret-state-2")) }, "secret-state-2"},
		{"runtime error", func() {
			var m map[string]int
			//lint:ignore SA5000 the test needs a runtime panic
			m["secret-state-3"]++
		}, "nil map"},
	}
	s := newStack(t)
	for i, tt := range tests {
		s.srv.AddPanicRoute("/test/panic/"+string(rune('a'+i)), tt.panic)
	}
	base := s.serve(t)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, http.MethodGet, base+"/test/panic/"+string(rune('a'+i)), nil, "X-Request-Id", "panic-req")
			e := checkErrorShape(t, r)
			if e.Code != h4r.EINTERNAL || r.status != http.StatusInternalServerError {
				t.Errorf("code %q status %d, want internal 500", e.Code, r.status)
			}
			if strings.Contains(string(r.body), tt.secret) {
				t.Errorf("the answer leaks the panic: %s", r.body)
			}
			if r.header.Get("X-Request-Id") != "panic-req" || !strings.Contains(e.Message, "panic-req") {
				t.Errorf("header %q, message %q: want the request id in both", r.header.Get("X-Request-Id"), e.Message)
			}
			if r := do(t, http.MethodGet, base+"/health/live", nil); r.status != http.StatusOK {
				t.Errorf("after a panic /health/live answers %d", r.status)
			}
		})
	}
}

// TestAbortHandlerPanicAborts checks that http.ErrAbortHandler is not
// recovered: it must abort the response, as net/http documents.
func TestAbortHandlerPanicAborts(t *testing.T) {
	s := newStack(t)
	s.srv.AddPanicRoute("/test/abort", func() { panic(http.ErrAbortHandler) })
	base := s.serve(t)
	if r, err := send(http.MethodGet, base+"/test/abort", nil); err == nil {
		t.Fatalf("got an answer (status %d: %s), want the connection aborted", r.status, r.body)
	}
}
