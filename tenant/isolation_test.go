package tenant_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/internal/pgtest"
	"github.com/h4r/h4r/tenant"
)

// backend is a store configuration the tenants are derived from.
type backend struct {
	name string
	base func(t *testing.T) config.Config
}

func backends() []backend {
	return []backend{
		{"sqlite", func(t *testing.T) config.Config {
			cfg := config.Default()
			cfg.DataDir = t.TempDir()
			return cfg
		}},
		{"postgres", func(t *testing.T) config.Config {
			cfg := config.Default()
			cfg.DataDir = t.TempDir()
			cfg.DatabaseURL = pgtest.Schema(t, "h4r_tenanttest")
			return cfg
		}},
	}
}

// newTenant creates a tenant of a random name, deleted when t ends.
func newTenant(t *testing.T, base config.Config, prefix string) tenant.Spec {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	spec := tenant.Spec{Name: prefix + "_" + hex.EncodeToString(b)}
	if err := tenant.Create(context.Background(), base, spec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := tenant.Delete(context.Background(), base, spec); err != nil {
			t.Errorf("deleting tenant %s: %v", spec.Name, err)
		}
	})
	return spec
}

var fixedNow = time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)

func openTenant(t *testing.T, base config.Config, spec tenant.Spec) *app.App {
	t.Helper()
	cfg, err := tenant.Config(base, spec)
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Open(context.Background(), cfg, app.WithClock(func() time.Time { return fixedNow }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return a
}

// corpus is n items x0..x(n-1), each about the same words, marked with
// whose they are.
func corpus(owner string, n int) []h4r.Item {
	words := []string{"quartz rollback pipeline", "quartz deploy checklist", "rollback of the billing pipeline", "pipeline latency budget", "quartz cache warmup"}
	items := make([]h4r.Item, n)
	for i := range items {
		items[i] = h4r.Item{ID: fmt.Sprintf("x%d", i), Kind: "note",
			Text:     fmt.Sprintf("%s, %s's note %d", words[i%len(words)], owner, i),
			Metadata: h4r.Metadata{CreatedAt: fixedNow.Add(-time.Duration(i) * time.Hour)}}
	}
	return items
}

type ranked struct {
	id    string
	score float64
	text  string
}

func pack(t *testing.T, a *app.App, text string) []ranked {
	t.Helper()
	req := h4r.ContextRequest{Query: h4r.Query{Type: h4r.QueryKeyword, Text: text}, Limit: 20}
	plan, err := req.Plan("")
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Engine.Run(context.Background(), h4r.Specialist{ID: "reader", SecurityLevel: h4r.Restricted}, plan)
	if err != nil {
		t.Fatal(err)
	}
	var out []ranked
	for _, r := range p.Results {
		out = append(out, ranked{r.ID, r.Score, r.Text})
	}
	return out
}

// TestTenantsContract: two tenants with the same ids and words in one
// store. Neither reads, counts or ranks by the other's items; tenant A's
// scores are the same, to the bit, before and after tenant B's larger
// corpus is loaded; deleting B says how much it removed and leaves A.
func TestTenantsContract(t *testing.T) {
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) {
			ctx := context.Background()
			base := be.base(t)
			specA := newTenant(t, base, "ta")
			a := openTenant(t, base, specA)
			if _, err := a.Store.Upsert(ctx, corpus("alpha", 5)); err != nil {
				t.Fatal(err)
			}
			before := pack(t, a, "quartz rollback pipeline")
			if len(before) == 0 {
				t.Fatal("tenant A's pack is empty: the comparison would prove nothing")
			}

			specB := newTenant(t, base, "tb")
			b := openTenant(t, base, specB)
			if _, err := b.Store.Upsert(ctx, corpus("bravo", 40)); err != nil {
				t.Fatal(err)
			}
			after := pack(t, a, "quartz rollback pipeline")
			if fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("tenant A's pack changed when tenant B's corpus was loaded:\nbefore %v\nafter  %v", before, after)
			}
			for _, r := range after {
				if strings.Contains(r.text, "bravo") {
					t.Errorf("tenant A's pack holds tenant B's item %s: %q", r.id, r.text)
				}
			}
			for _, r := range pack(t, b, "quartz rollback pipeline") {
				if strings.Contains(r.text, "alpha") {
					t.Errorf("tenant B's pack holds tenant A's item %s: %q", r.id, r.text)
				}
			}
			for _, tc := range []struct {
				name  string
				a     *app.App
				count int
				owner string
			}{{"A", a, 5, "alpha"}, {"B", b, 40, "bravo"}} {
				if n, err := tc.a.Store.Count(ctx); err != nil || n != tc.count {
					t.Errorf("tenant %s counts %d items (%v), want %d", tc.name, n, err, tc.count)
				}
				it, err := tc.a.Store.Get(ctx, "x1")
				if err != nil || !strings.Contains(it.Text, tc.owner) {
					t.Errorf("tenant %s's x1 = %+v, %v: want its own", tc.name, it, err)
				}
				found, err := tc.a.Store.Find(ctx, h4r.ItemQuery{Limit: 100})
				if err != nil {
					t.Fatal(err)
				}
				for _, it := range found {
					if !strings.Contains(it.Text, tc.owner) {
						t.Errorf("tenant %s finds another tenant's item %s: %q", tc.name, it.ID, it.Text)
					}
				}
			}
			// An id only B holds is a miss in A, as an id nobody holds.
			_, errOnlyB := a.Store.Get(ctx, "x30")
			_, errNobody := a.Store.Get(ctx, "x99")
			if !isNotFound(errOnlyB) || !isNotFound(errNobody) || strings.ReplaceAll(errOnlyB.Error(), "x30", "x99") != errNobody.Error() {
				t.Errorf("tenant A reading B's id: %v; an id nobody holds: %v (want the same miss)", errOnlyB, errNobody)
			}

			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			removed, err := tenant.Delete(ctx, base, specB)
			if err != nil {
				t.Fatal(err)
			}
			if removed.Items != 40 || removed.Bytes <= 0 {
				t.Errorf("deleting tenant B removed %+v, want 40 items and some bytes", removed)
			}
			if n, _ := a.Store.Count(ctx); n != 5 {
				t.Errorf("tenant A counts %d items after B's delete, want 5", n)
			}
			if got := pack(t, a, "quartz rollback pipeline"); fmt.Sprint(got) != fmt.Sprint(before) {
				t.Errorf("tenant A's pack changed when tenant B was deleted:\nbefore %v\nafter  %v", before, got)
			}
		})
	}
}

func isNotFound(err error) bool {
	var herr *h4r.Error
	return errors.As(err, &herr) && herr.Code == h4r.ENOTFOUND
}

// TestPostgresRoleGuard: the second guard behind the schema. A query
// through tenant A's connection that names tenant B's tables, or the
// default tenant's, is refused by Postgres (no privilege on the schema),
// so a query that forgets its tenant cannot read another's rows.
func TestPostgresRoleGuard(t *testing.T) {
	base := backends()[1].base(t)
	ctx := context.Background()
	specA, specB := newTenant(t, base, "ga"), newTenant(t, base, "gb")
	for _, spec := range []tenant.Spec{specA, specB} {
		if _, err := openTenant(t, base, spec).Store.Upsert(ctx, corpus(spec.Name, 3)); err != nil {
			t.Fatal(err)
		}
	}
	cfgA, err := tenant.Config(base, specA)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, cfgA.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM items`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("tenant A's own items through its connection: %d, %v; want 3", n, err)
	}
	_, defaultSchema, _ := strings.Cut(base.DatabaseURL, "search_path=")
	defaultSchema, _, _ = strings.Cut(defaultSchema, "&")
	for _, tc := range []struct{ name, sql string }{
		{"tenant B's items by schema", `SELECT count(*) FROM h4r_tenant_` + specB.Name + `.items`},
		{"tenant B's postings by schema", `SELECT count(*) FROM h4r_tenant_` + specB.Name + `.postings`},
		{"the default tenant's items", `SELECT count(*) FROM ` + pgx.Identifier{defaultSchema}.Sanitize() + `.items`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := conn.QueryRow(ctx, tc.sql).Scan(&n)
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
				t.Errorf("%s: got %d, %v; want permission denied (42501)", tc.sql, n, err)
			}
		})
	}
	// Moving the search path does not help either: the schema is not
	// visible to the role.
	if _, err := conn.Exec(ctx, `SET search_path TO h4r_tenant_`+specB.Name); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM items`).Scan(&n); err == nil {
		t.Errorf("tenant A's connection read %d items with tenant B's search path", n)
	}
}
