package tenant

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/h4r/h4r/config"
)

// Config derives a tenant's configuration from the service's: the same
// settings over the tenant's own namespace in every backend. The default
// tenant's is base unchanged.
//
//   - SQLite: DataDir/tenants/NAME (its database, jobs and snapshots);
//   - Postgres: search_path and role h4r_tenant_NAME (Create makes them);
//   - Qdrant: the collection QDRANT_COLLECTION_NAME;
//   - NATS: the trace stream, durable and subjects suffixed with NAME;
//   - policy: the tenant's own bundle, else the default's;
//   - the decision log: a file of its own beside the default's (stdout
//     stays shared, each record logged by the tenant's own logger);
//   - the GitHub webhook: the tenant's own secret, else none;
//   - the folders POST /ingest may read: the tenant's own, else none.
//
// A Neo4j mirror has no tenant namespace yet, so Config refuses NEO4J_URL
// for any tenant but the default rather than share one graph.
func Config(base config.Config, s Spec) (config.Config, error) {
	cfg := base
	cfg.Tenant = s.Name
	if s.Name == Default {
		return cfg, nil
	}
	if err := CheckName(s.Name); err != nil {
		return cfg, err
	}
	cfg.TenantsFile = ""
	cfg.DataDir = filepath.Join(base.DataDir, "tenants", s.Name)
	if base.DatabaseURL != "" {
		u, err := scopeDatabaseURL(base.DatabaseURL, schemaName(s.Name))
		if err != nil {
			return cfg, err
		}
		cfg.DatabaseURL = u
	}
	if base.Neo4jURL != "" {
		return cfg, fmt.Errorf("tenant %s: NEO4J_URL is set, and the Neo4j mirror keeps one graph for every tenant; unset it to serve tenants (hops then run in each tenant's own store)", s.Name)
	}
	cfg.QdrantCollection = base.QdrantCollection + "_" + s.Name
	cfg.TraceSubject = base.TraceSubject + "." + s.Name
	cfg.LandedSubject = base.LandedSubject + "." + s.Name
	cfg.TraceStream = base.TraceStream + "_" + s.Name
	cfg.TraceDurable = base.TraceDurable + "-" + s.Name
	if base.TraceDeadLetter != "" {
		cfg.TraceDeadLetter = base.TraceDeadLetter + "." + s.Name
	}
	if base.DecisionSubject != "" {
		cfg.DecisionSubject = base.DecisionSubject + "." + s.Name
	}
	if s.PolicyDir != "" {
		cfg.PolicyDir = s.PolicyDir
	}
	if base.DecisionLog != "" && base.DecisionLog != "stdout" {
		ext := filepath.Ext(base.DecisionLog)
		cfg.DecisionLog = strings.TrimSuffix(base.DecisionLog, ext) + "." + s.Name + ext
	}
	cfg.IngestRoots = s.IngestRoots
	cfg.GitHubWebhookSecret = ""
	if s.WebhookSecretFile != "" {
		b, err := os.ReadFile(s.WebhookSecretFile)
		if err != nil {
			return cfg, fmt.Errorf("tenant %s: reading its webhook secret: %w", s.Name, err)
		}
		cfg.GitHubWebhookSecret = strings.TrimSpace(string(b))
	}
	return cfg, nil
}

// scopeDatabaseURL points a Postgres connection string at a tenant's
// schema, and makes every connection act as the tenant's role (a startup
// parameter, so that it holds from the first statement).
func scopeDatabaseURL(dsn, schema string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("DATABASE_URL: %w", err)
		}
		q := u.Query()
		q.Set("search_path", schema)
		q.Set("role", schema)
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	// key=value: a later setting overrides an earlier one.
	return dsn + " search_path=" + schema + " role=" + schema, nil
}
