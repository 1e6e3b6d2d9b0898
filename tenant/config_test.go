package tenant_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/server"
	"github.com/h4r/h4r/store/sqlite"
	"github.com/h4r/h4r/tenant"
)

func TestCheckName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"acme", true}, {"team_2", true}, {"a", true}, {strings.Repeat("a", 40), true},
		{"", false}, {"Acme", false}, {"2team", false}, {"a-b", false}, {"a.b", false}, {"a b", false},
		{"../x", false}, {strings.Repeat("a", 41), false}, {"é", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tenant.CheckName(tc.name); (err == nil) != tc.ok {
				t.Errorf("CheckName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
			}
		})
	}
}

func TestRegistry(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tenants.json")
	reg, err := tenant.Load(path)
	if err != nil || len(reg.Specs()) != 0 {
		t.Fatalf("a missing file: %v, %v", reg, err)
	}
	if err := reg.Add(tenant.Spec{Name: "acme", MaxItems: 10}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		spec tenant.Spec
	}{
		{"twice", tenant.Spec{Name: "acme"}},
		{"the default", tenant.Spec{Name: tenant.Default}},
		{"a bad name", tenant.Spec{Name: "Acme"}},
		{"a negative quota", tenant.Spec{Name: "neg", MaxBytes: -1}},
	} {
		if err := reg.Add(tc.spec); err == nil {
			t.Errorf("adding %s was accepted", tc.name)
		}
	}
	again, err := tenant.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := again.Lookup("acme"); !ok || s.MaxItems != 10 {
		t.Errorf("acme after a reload: %+v %v", s, ok)
	}
	if _, ok := again.Lookup(tenant.Default); !ok {
		t.Error("the default tenant is not found")
	}
	if err := again.Remove("acme"); err != nil {
		t.Fatal(err)
	}
	if err := again.Remove("acme"); err == nil {
		t.Error("removing an absent tenant succeeded")
	}
	for _, tc := range []struct{ name, file string }{
		{"a duplicate", `[{"name": "a"}, {"name": "a"}]`},
		{"an unknown field", `[{"name": "a", "secret": "x"}]`},
		{"the default listed", `[{"name": "default"}]`},
		{"a bad name", `[{"name": "../etc"}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "t.json")
			if err := os.WriteFile(p, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := tenant.Load(p); err == nil {
				t.Errorf("%s loaded", tc.file)
			}
		})
	}
}

func TestConfig(t *testing.T) {
	base := config.Default()
	base.DataDir = "/var/h4r"
	base.DecisionSubject = "buckley.trace.decision"
	base.GitHubWebhookSecret = "the default's secret"
	base.DecisionLog = "/var/log/h4r/decisions.jsonl"
	base.IngestRoots = "/srv/default-repos"
	if got, err := tenant.Config(base, tenant.Spec{Name: tenant.Default}); err != nil || got.DataDir != base.DataDir || got.GitHubWebhookSecret != base.GitHubWebhookSecret {
		t.Errorf("the default tenant's configuration changed: %v", err)
	}
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("acme's secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := tenant.Config(base, tenant.Spec{Name: "acme", PolicyDir: "/etc/acme-policy", WebhookSecretFile: secret, IngestRoots: "/srv/acme"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ what, got, want string }{
		{"data dir", got.DataDir, "/var/h4r/tenants/acme"},
		{"sqlite path", got.SQLitePath(), "/var/h4r/tenants/acme/h4r.db"},
		{"policy", got.PolicyDir, "/etc/acme-policy"},
		{"webhook secret", got.GitHubWebhookSecret, "acme's secret"},
		{"trace subject", got.TraceSubject, base.TraceSubject + ".acme"},
		{"trace stream", got.TraceStream, base.TraceStream + "_acme"},
		{"durable", got.TraceDurable, base.TraceDurable + "-acme"},
		{"decision subject", got.DecisionSubject, "buckley.trace.decision.acme"},
		{"qdrant collection", got.QdrantCollection, base.QdrantCollection + "_acme"},
		{"tenant", got.Tenant, "acme"},
		{"ingest roots", got.IngestRoots, "/srv/acme"},
		{"decision log", got.DecisionLog, "/var/log/h4r/decisions.acme.jsonl"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %q, want %q", tc.what, tc.got, tc.want)
		}
	}
	if got, _ := tenant.Config(base, tenant.Spec{Name: "beta"}); got.PolicyDir != base.PolicyDir || got.GitHubWebhookSecret != "" || got.IngestRoots != "" {
		t.Errorf("beta without its own policy, secret and roots: policy %q (want the default's), secret %q, roots %q (want none)", got.PolicyDir, got.GitHubWebhookSecret, got.IngestRoots)
	}
	for _, tc := range []struct{ dsn, want string }{
		{"postgres://h4r@db:5432/h4r?sslmode=disable", "postgres://h4r@db:5432/h4r?role=h4r_tenant_acme&search_path=h4r_tenant_acme&sslmode=disable"},
		{"postgres://h4r@db/h4r?search_path=other", "postgres://h4r@db/h4r?role=h4r_tenant_acme&search_path=h4r_tenant_acme"},
		{"host=db dbname=h4r", "host=db dbname=h4r search_path=h4r_tenant_acme role=h4r_tenant_acme"},
	} {
		pg := base
		pg.DatabaseURL = tc.dsn
		got, err := tenant.Config(pg, tenant.Spec{Name: "acme"})
		if err != nil || got.DatabaseURL != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.dsn, got.DatabaseURL, err, tc.want)
		}
	}
	neo := base
	neo.Neo4jURL = "neo4j://localhost:7687"
	if _, err := tenant.Config(neo, tenant.Spec{Name: "acme"}); err == nil {
		t.Error("a tenant over a shared Neo4j graph was configured")
	}
	if _, err := tenant.Config(base, tenant.Spec{Name: "Bad/Name"}); err == nil {
		t.Error("a bad tenant name was configured")
	}
}

func TestQuota(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "h4r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Upsert(ctx, []h4r.Item{{ID: "a", Text: "0123456789"}}); err != nil {
		t.Fatal(err)
	}
	if tenant.NewQuota(tenant.Spec{Name: "acme"}) != nil {
		t.Error("a tenant without quotas has a guard")
	}
	q := tenant.NewQuota(tenant.Spec{Name: "acme", MaxItems: 2, MaxBytes: 25})
	admit := func(items []h4r.Item, deletes []string) error {
		done, err := q.Admit(ctx, st, items, deletes)
		if err != nil {
			return err
		}
		if _, err := st.Replace(ctx, items, deletes); err != nil {
			t.Fatal(err)
		}
		done()
		return nil
	}
	for _, tc := range []struct {
		name    string
		items   []h4r.Item
		deletes []string
		refused string // a word of the refusal; "": admitted
	}{
		{"a second item fits", []h4r.Item{{ID: "b", Text: "0123456789"}}, nil, ""},
		{"a third is over the item quota", []h4r.Item{{ID: "c", Text: "x"}}, nil, "quota of 2 items"},
		{"replacing an item adds none", []h4r.Item{{ID: "a", Text: "012345678901234"}}, nil, ""},
		{"growing past the bytes is refused", []h4r.Item{{ID: "b", Text: "01234567890123456789"}}, nil, "quota of 25 bytes"},
		{"a delete and an add in one write fit", []h4r.Item{{ID: "c", Text: "x"}}, []string{"b"}, ""},
		{"shrinking is always admitted", []h4r.Item{{ID: "a", Text: "y"}}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := admit(tc.items, tc.deletes)
			switch {
			case tc.refused == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
				t.Errorf("got %v, want a refusal naming %q", err, tc.refused)
			case tc.refused != "" && server.HTTPStatus(err.(*h4r.Error).Code) != http.StatusTooManyRequests:
				t.Errorf("the refusal is %d, want 429", server.HTTPStatus(err.(*h4r.Error).Code))
			}
		})
	}
	if n, b, err := q.Usage(ctx, st); err != nil || n != 2 || b != 2 {
		t.Errorf("usage = %d items, %d bytes, %v; want 2 and 2", n, b, err)
	}
}
