package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/internal/pgtest"
)

// TestRecreatedItemIsDecidedAnew is the regression test of a fail-open
// path an adversarial client found: an item packed (so its decision and
// delivered size were cached), deleted, and written again under the same
// id with credentials or PII must be decided anew at once, on both stores.
// Before versions survived deletes, the re-created item came back at
// version 1, every cache keyed on (id, version) answered with the harmless
// item's decision, and the next pack delivered the secret (and, in the PII
// variant, the unredacted personal data) for the cache TTL. On Postgres the
// delete and the re-creation may come through another replica, whose
// writes the first one's item cache learns only from the rows' versions.
func TestRecreatedItemIsDecidedAnew(t *testing.T) {
	stores := []struct {
		name string
		// store returns the configuration of the store, the same for both
		// replicas of one test.
		store   func(t *testing.T) func(c *config.Config)
		replica bool // the delete and the re-creation go through a second server on the same store
	}{
		{"embedded", func(*testing.T) func(*config.Config) { return func(*config.Config) {} }, false},
		{"postgres", postgresStore, false},
		{"postgres, re-created by another replica", postgresStore, true},
	}
	variants := []struct {
		name      string
		recreated string // the item written again under the same id
		secret    string // what must not be delivered
		wantKept  bool   // a PII item is delivered, redacted
	}{
		{"credentials", `{"id": "zz-note", "kind": "note", "text": "zebra rollout notes: token hunter2",
			"content": {"token": "hunter2"}, "metadata": {"hasCredentials": true}}`, "hunter2", false},
		{"personal data", `{"id": "zz-note", "kind": "note", "text": "zebra rollout notes",
			"content": {"owner": "Zed Zebra-Ssn 078-05-1120"}, "metadata": {"containsPII": true, "piiFields": ["$.content.owner"]}}`, "078-05-1120", true},
	}
	const harmless = `{"id": "zz-note", "kind": "note", "text": "zebra rollout notes", "content": {"owner": "team"}}`
	const query = `{"query": {"text": "zebra rollout notes", "type": "keyword"}, "limit": 5}`
	for _, st := range stores {
		for _, v := range variants {
			t.Run(st.name+"/"+v.name, func(t *testing.T) {
				store := st.store(t)
				configure := func(c *config.Config) {
					store(c)
					c.OPACacheTTL = config.Default().OPACacheTTL // the shipped decision cache
				}
				base := newStackWith(t, configure).serve(t)
				writer := base
				if st.replica {
					writer = newStackWith(t, configure).serve(t)
				}
				if r := post(t, writer+"/v1/items", harmless); r.status != http.StatusOK {
					t.Fatalf("ingest: %d %s", r.status, r.body)
				}
				first := decodePack(t, post(t, base+"/v1/context-pack", query))
				if !delivered(first, "zz-note") {
					t.Fatalf("the harmless item was not delivered: the test needs its decision cached")
				}
				if r := do(t, http.MethodDelete, writer+"/v1/items/zz-note", nil); r.status != http.StatusNoContent {
					t.Fatalf("delete: %d %s", r.status, r.body)
				}
				if r := post(t, writer+"/v1/items", v.recreated); r.status != http.StatusOK {
					t.Fatalf("re-ingest: %d %s", r.status, r.body)
				}
				r := post(t, base+"/v1/context-pack", query)
				if strings.Contains(string(r.body), v.secret) {
					t.Fatalf("the pack after re-creation delivers %q: a cached decision of the deleted item applied\n%s", v.secret, r.body)
				}
				after := decodePack(t, r)
				if got := delivered(after, "zz-note"); got != v.wantKept {
					t.Errorf("re-created item delivered: %v, want %v", got, v.wantKept)
				}
				// What is delivered is the re-created item, never a stale
				// copy of the harmless one.
				for _, res := range after.Results {
					if old := resultVersion(first, res.ID); res.ID == "zz-note" && res.Metadata.Version <= old {
						t.Errorf("zz-note delivered at version %d, the deleted item's was %d: a stale copy", res.Metadata.Version, old)
					}
				}
			})
		}
	}
}

// postgresStore gives a test a Postgres schema of its own.
func postgresStore(t *testing.T) func(*config.Config) {
	dsn := pgtest.Schema(t, "h4r_server_recreate")
	return func(c *config.Config) { c.DatabaseURL = dsn }
}

// resultVersion is the version at which p delivers id (0: not delivered).
func resultVersion(p *h4r.Pack, id string) int {
	for _, r := range p.Results {
		if r.ID == id {
			return r.Metadata.Version
		}
	}
	return 0
}

// delivered reports whether the pack delivers the item id.
func delivered(p *h4r.Pack, id string) bool {
	for _, r := range p.Results {
		if r.ID == id {
			return true
		}
	}
	return false
}
