package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/internal/jsonstrict"
)

// Route is a class of routes a key may call.
type Route string

// Route classes. read: context packs and A2A (policy-sliced answers);
// ingest: writing and deleting items; admin: raw item reads (which bypass
// policy), metrics and policy administration. audit opens no route: it
// lets a read key's packs explain the items policy hid from it (their ids,
// reasons and signals), which admin keys see too.
const (
	RouteRead   Route = "read"
	RouteIngest Route = "ingest"
	RouteAdmin  Route = "admin"
	RouteAudit  Route = "audit"
)

// Limits on the keys file, so that a mistaken file cannot exhaust memory.
const (
	MaxKeys      = 10_000
	MaxFileBytes = 16 << 20
)

// Principal is who an API key speaks for.
type Principal struct {
	Specialist         h4r.Specialist
	Routes             []Route
	RateLimitPerMinute int    // 0: the server's default
	KeyID              string // the first 12 hex digits of the key's hash, for logs and metrics
	// Tenant is the one tenant the key belongs to ("": the default
	// tenant). Requests with the key never reach another tenant's data.
	Tenant string
	// Operator keys belong to no tenant: they name the tenant of each
	// request in a header (package tenant), and default to the default
	// tenant without it.
	Operator bool
}

// Allows reports whether the principal may call routes of class r.
func (p *Principal) Allows(r Route) bool { return slices.Contains(p.Routes, r) }

// MayAudit reports whether the principal's packs may explain what policy
// hid from it: keys with the audit or the admin class (an admin reads raw
// items anyway).
func (p *Principal) MayAudit() bool { return p.Allows(RouteAudit) || p.Allows(RouteAdmin) }

// entry is one element of the keys file.
type entry struct {
	SHA256 string `json:"sha256"`
	// Principal is decoded on its own so that errors inside it (an unknown
	// security level) name it: "[2].principal.securityLevel".
	Principal          json.RawMessage `json:"principal"`
	Routes             []Route         `json:"routes"`
	RateLimitPerMinute int             `json:"rateLimitPerMinute,omitempty"`
	Tenant             string          `json:"tenant,omitempty"`
	Operator           bool            `json:"operator,omitempty"`
}

// Keys maps key hashes to principals. It is read-only after Parse and safe
// for concurrent use.
type Keys struct {
	byHash map[[sha256.Size]byte]*Principal
}

// Hash returns the hex SHA-256 of a key, as the keys file stores it.
func Hash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// Load reads and parses a keys file.
func Load(path string) (*Keys, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("API keys file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("API keys file: %w", err)
	}
	if len(b) > MaxFileBytes {
		return nil, fmt.Errorf("API keys file %s is larger than %d bytes", path, MaxFileBytes)
	}
	k, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("API keys file %s: %w", path, err)
	}
	return k, nil
}

// Parse decodes a keys file strictly. Errors are *h4r.Error naming the
// offending entry and field ("[2].principal.securityLevel").
func Parse(data []byte) (*Keys, error) {
	var entries []entry
	if err := jsonstrict.Decode(data, &entries, ""); err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, h4r.Errorf(h4r.EINVALID, "", "the keys file lists no keys (unset H4R_API_KEYS_FILE to run without authentication)")
	}
	if len(entries) > MaxKeys {
		return nil, h4r.Errorf(h4r.EINVALID, "", "at most %d keys, got %d", MaxKeys, len(entries))
	}
	k := &Keys{byHash: make(map[[sha256.Size]byte]*Principal, len(entries))}
	for i, e := range entries {
		at := func(name string) string { return fmt.Sprintf("[%d].%s", i, name) }
		raw, err := hex.DecodeString(strings.ToLower(e.SHA256))
		if err != nil || len(raw) != sha256.Size {
			return nil, h4r.Errorf(h4r.EINVALID, at("sha256"), "want the 64 hex digits of the key's SHA-256 (printf %%s \"$KEY\" | h4r keys hash), not the key itself")
		}
		var sum [sha256.Size]byte
		copy(sum[:], raw)
		if _, dup := k.byHash[sum]; dup {
			return nil, h4r.Errorf(h4r.EINVALID, at("sha256"), "the same key hash is listed twice")
		}
		var spec h4r.Specialist
		if len(e.Principal) == 0 {
			return nil, h4r.Errorf(h4r.EINVALID, at("principal"), "principal is required")
		}
		if err := jsonstrict.Decode(e.Principal, &spec, at("principal")); err != nil {
			return nil, err
		}
		if strings.TrimSpace(spec.ID) == "" {
			return nil, h4r.Errorf(h4r.EINVALID, at("principal.id"), "principal id is required")
		}
		if spec.Type == "" {
			spec.Type = "specialist"
		}
		if spec.AuthorizedGroups == nil {
			spec.AuthorizedGroups = []string{}
		}
		if len(e.Routes) == 0 {
			return nil, h4r.Errorf(h4r.EINVALID, at("routes"), "at least one route class is required (read, ingest, admin or audit)")
		}
		for j, r := range e.Routes {
			switch r {
			case RouteRead, RouteIngest, RouteAdmin:
			case RouteAudit:
				if !slices.Contains(e.Routes, RouteRead) {
					return nil, h4r.Errorf(h4r.EINVALID, fmt.Sprintf("[%d].routes[%d]", i, j), "audit widens what read routes answer: a key with audit needs read too")
				}
			default:
				return nil, h4r.Errorf(h4r.EINVALID, fmt.Sprintf("[%d].routes[%d]", i, j), "unknown route class %q (want read, ingest, admin or audit)", r)
			}
		}
		if e.RateLimitPerMinute < 0 {
			return nil, h4r.Errorf(h4r.EINVALID, at("rateLimitPerMinute"), "must be >= 0 (0: the server's default), got %d", e.RateLimitPerMinute)
		}
		if e.Tenant != "" && e.Operator {
			return nil, h4r.Errorf(h4r.EINVALID, at("operator"), "an operator key names the tenant per request: it cannot also belong to tenant %q", e.Tenant)
		}
		if e.Tenant != strings.TrimSpace(e.Tenant) {
			return nil, h4r.Errorf(h4r.EINVALID, at("tenant"), "tenant %q has surrounding spaces", e.Tenant)
		}
		k.byHash[sum] = &Principal{
			Tenant:             e.Tenant,
			Operator:           e.Operator,
			Specialist:         spec,
			Routes:             slices.Clone(e.Routes),
			RateLimitPerMinute: e.RateLimitPerMinute,
			KeyID:              hex.EncodeToString(sum[:6]),
		}
	}
	return k, nil
}

// Authenticate returns the principal of a key. The key is hashed before the
// lookup, so the time taken depends on the hash, not on how much of a
// guessed key matches a real one.
func (k *Keys) Authenticate(key string) (*Principal, bool) {
	if key == "" {
		return nil, false
	}
	p, ok := k.byHash[sha256.Sum256([]byte(key))]
	return p, ok
}

// Principals returns every key's principal, in no particular order (the
// tenant router checks that each key's tenant exists).
func (k *Keys) Principals() []*Principal {
	ps := make([]*Principal, 0, len(k.byHash))
	for _, p := range k.byHash {
		ps = append(ps, p)
	}
	return ps
}

// Len returns the number of keys.
func (k *Keys) Len() int { return len(k.byHash) }
