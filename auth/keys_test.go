package auth_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/auth"
)

// healerHash is auth.Hash("healer-key").
var healerHash = auth.Hash("healer-key")

func TestPrincipalsCarryTheirTenant(t *testing.T) {
	k, err := auth.Parse([]byte(`[{"sha256": "` + healerHash + `", "principal": {"id": "a"}, "routes": ["read"], "tenant": "acme"}]`))
	if err != nil {
		t.Fatal(err)
	}
	p, ok := k.Authenticate("healer-key")
	if !ok || p.Tenant != "acme" || p.Operator {
		t.Errorf("the key's principal: %+v, %v; want tenant acme, no operator", p, ok)
	}
	if ps := k.Principals(); len(ps) != 1 || ps[0] != p {
		t.Errorf("Principals() = %v", ps)
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name  string
		file  string
		field string // of the error; "-" for no error
	}{
		{"a full entry", `[{"sha256": "` + healerHash + `", "principal": {"id": "playwright_healer", "type": "specialist", "securityLevel": "internal", "authorizedGroups": ["qa"]}, "routes": ["read", "ingest"], "rateLimitPerMinute": 5}]`, "-"},
		{"an upper-case hash", `[{"sha256": "` + upper(healerHash) + `", "principal": {"id": "a"}, "routes": ["read"]}]`, "-"},
		{"an empty list", `[]`, ""},
		{"not a list", `{"sha256": "x"}`, ""},
		{"an unknown field", `[{"sha256": "` + healerHash + `", "principal": {"id": "a"}, "routes": ["read"], "key": "secret"}]`, "[0].key"},
		{"the key instead of its hash", `[{"sha256": "healer-key", "principal": {"id": "a"}, "routes": ["read"]}]`, "[0].sha256"},
		{"a short hash", `[{"sha256": "abcd", "principal": {"id": "a"}, "routes": ["read"]}]`, "[0].sha256"},
		{"a duplicate hash", `[{"sha256": "` + healerHash + `", "principal": {"id": "a"}, "routes": ["read"]}, {"sha256": "` + healerHash + `", "principal": {"id": "b"}, "routes": ["read"]}]`, "[1].sha256"},
		{"no principal id", `[{"sha256": "` + healerHash + `", "principal": {"securityLevel": "public"}, "routes": ["read"]}]`, "[0].principal.id"},
		{"an unknown level", `[{"sha256": "` + healerHash + `", "principal": {"id": "a", "securityLevel": "secret"}, "routes": ["read"]}]`, "[0].principal.securityLevel"},
		{"no principal", `[{"sha256": "` + healerHash + `", "routes": ["read"]}]`, "[0].principal"},
		{"no routes", `[{"sha256": "` + healerHash + `", "principal": {"id": "a"}}]`, "[0].routes"},
		{"an unknown route", `[{"sha256": "` + healerHash + `", "principal": {"id": "a"}, "routes": ["read", "write"]}]`, "[0].routes[1]"},
		{"a key of a tenant", `[{"sha256": "` + healerHash + `", "principal": {"id": "a"}, "routes": ["read"], "tenant": "acme"}]`, "-"},
		{"an operator key", `[{"sha256": "` + healerHash + `", "principal": {"id": "a"}, "routes": ["read"], "operator": true}]`, "-"},
		{"an operator key of a tenant", `[{"sha256": "` + healerHash + `", "principal": {"id": "a"}, "routes": ["read"], "operator": true, "tenant": "acme"}]`, "[0].operator"},
		{"a tenant in spaces", `[{"sha256": "` + healerHash + `", "principal": {"id": "a"}, "routes": ["read"], "tenant": " acme"}]`, "[0].tenant"},
		{"a negative rate limit", `[{"sha256": "` + healerHash + `", "principal": {"id": "a"}, "routes": ["read"], "rateLimitPerMinute": -1}]`, "[0].rateLimitPerMinute"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := auth.Parse([]byte(tt.file))
			if tt.field == "-" {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if k.Len() == 0 {
					t.Fatal("no keys")
				}
				return
			}
			if err == nil {
				t.Fatal("Parse accepted the file")
			}
			if code := h4r.ErrorCode(err); code != h4r.EINVALID {
				t.Errorf("code %s, want invalid_argument: %v", code, err)
			}
			var e *h4r.Error
			if !errors.As(err, &e) || e.Field != tt.field {
				t.Errorf("field %q, want %q: %v", e.Field, tt.field, err)
			}
		})
	}
}

func TestAuthenticate(t *testing.T) {
	k, err := auth.Parse([]byte(`[{"sha256": "` + healerHash + `", "principal": {"id": "playwright_healer", "securityLevel": "internal", "authorizedGroups": ["qa"]}, "routes": ["read"]}]`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		key  string
		ok   bool
	}{
		{"the key", "healer-key", true},
		{"no key", "", false},
		{"the hash presented as the key", healerHash, false},
		{"a prefix of the key", "healer-ke", false},
		{"the key with a trailing space", "healer-key ", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ok := k.Authenticate(tt.key)
			if ok != tt.ok {
				t.Fatalf("ok %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			want := h4r.Specialist{Type: "specialist", ID: "playwright_healer", SecurityLevel: h4r.Internal, AuthorizedGroups: []string{"qa"}}
			if p.Specialist.ID != want.ID || p.Specialist.Type != want.Type || p.Specialist.SecurityLevel != want.SecurityLevel || len(p.Specialist.AuthorizedGroups) != 1 {
				t.Errorf("principal %+v, want %+v", p.Specialist, want)
			}
			if !p.Allows(auth.RouteRead) || p.Allows(auth.RouteIngest) || p.Allows(auth.RouteAdmin) {
				t.Errorf("routes %v, want read only", p.Routes)
			}
			if p.KeyID != healerHash[:12] {
				t.Errorf("KeyID %q, want the hash's first 12 digits", p.KeyID)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "keys.json")
	if err := os.WriteFile(good, []byte(`[{"sha256": "`+healerHash+`", "principal": {"id": "a"}, "routes": ["admin"]}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	if k, err := auth.Load(good); err != nil || k.Len() != 1 {
		t.Fatalf("Load: %v", err)
	}
	if _, err := auth.Load(filepath.Join(dir, "missing.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want a not-exist error", err)
	}
}

// TestLimiter drives the bucket with explicit times, so it asserts no
// timing of its own.
func TestLimiter(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	k, err := auth.Parse([]byte(`[
		{"sha256": "` + auth.Hash("a") + `", "principal": {"id": "a"}, "routes": ["read"]},
		{"sha256": "` + auth.Hash("b") + `", "principal": {"id": "b"}, "routes": ["read"], "rateLimitPerMinute": 2}]`))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := k.Authenticate("a")
	b, _ := k.Authenticate("b")
	l := auth.NewLimiter(3)
	read, ingest := auth.RouteRead, auth.RouteIngest
	steps := []struct {
		name  string
		p     *auth.Principal
		class auth.Route
		at    time.Duration
		ok    bool
		retry time.Duration // when refused
	}{
		{"a 1 of the default 3", a, read, 0, true, 0},
		{"a 2", a, read, 0, true, 0},
		{"a 3", a, read, 0, true, 0},
		{"a 4 is refused, one token in 20s", a, read, 0, false, 20 * time.Second},
		{"a's ingest bucket is its own", a, ingest, 0, true, 0},
		{"b has its own bucket and limit (1)", b, read, 0, true, 0},
		{"b 2", b, read, 0, true, 0},
		{"b 3 is refused, one token in 30s", b, read, 0, false, 30 * time.Second},
		{"a refused again: a refusal used nothing", a, read, 10 * time.Second, false, 10 * time.Second},
		{"a after 20s", a, read, 20 * time.Second, true, 0},
		{"a at once again is refused", a, read, 20 * time.Second, false, 20 * time.Second},
		{"a's ingest bucket is not used up by reads", a, ingest, 20 * time.Second, true, 0},
	}
	for _, s := range steps {
		ok, retry := l.Allow(s.p, s.class, t0.Add(s.at))
		if ok != s.ok || retry != s.retry {
			t.Errorf("%s: Allow = %v, %v; want %v, %v", s.name, ok, retry, s.ok, s.retry)
		}
	}
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}
