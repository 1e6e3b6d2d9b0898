package tenant

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/jackc/pgx/v5"

	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/store/postgres"
	"github.com/h4r/h4r/store/sqlite"
)

// Create makes a tenant's namespace in the configured store: on SQLite
// its directory (the database is created when first opened), on Postgres
// its role and schema, the schema owned by the role, and the tables
// migrated in it. It is idempotent, so a create that failed half way can
// be run again.
func Create(ctx context.Context, base config.Config, s Spec) error {
	if err := s.check("tenant"); err != nil {
		return err
	}
	cfg, err := Config(base, s)
	if err != nil {
		return err
	}
	if base.DatabaseURL == "" {
		if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
			return fmt.Errorf("creating tenant %s's directory: %w", s.Name, err)
		}
		return nil
	}
	conn, err := pgx.Connect(ctx, base.DatabaseURL)
	if err != nil {
		return fmt.Errorf("connecting to Postgres to create tenant %s: %w", s.Name, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	id := pgx.Identifier{schemaName(s.Name)}.Sanitize()
	for _, stmt := range []string{
		// A role of its own, which cannot log in: connections act as it
		// (Config's role parameter), so it must be granted to the login
		// role.
		`DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '` + schemaName(s.Name) + `') THEN CREATE ROLE ` + id + ` NOLOGIN; END IF; END $$`,
		`GRANT ` + id + ` TO CURRENT_USER`,
		`CREATE SCHEMA IF NOT EXISTS ` + id + ` AUTHORIZATION ` + id,
		`REVOKE ALL ON SCHEMA ` + id + ` FROM PUBLIC`,
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("creating tenant %s's role and schema (the login role needs CREATEROLE and CREATE on the database): %w", s.Name, err)
		}
	}
	if _, _, err := postgres.Migrate(ctx, cfg.DatabaseURL); err != nil {
		return fmt.Errorf("creating tenant %s's tables: %w", s.Name, err)
	}
	return nil
}

// Removed says what Delete removed.
type Removed struct {
	Items int   `json:"items"` // items of every kind: memories, traces, decisions, chunks, trajectories
	Bytes int64 `json:"bytes"` // the files', or the schema's tables' and indexes', size
	// Left lists what a tenant may own outside the store, which Delete
	// does not remove.
	Left []string `json:"left,omitempty"`
}

// Delete removes everything a tenant owned in the configured store (its
// SQLite directory, or its Postgres schema, tables and role, jobs and
// stored packs included) and says how much. The default tenant cannot be
// deleted.
func Delete(ctx context.Context, base config.Config, s Spec) (Removed, error) {
	var r Removed
	if s.Name == Default {
		return r, fmt.Errorf("the %s tenant cannot be deleted", Default)
	}
	cfg, err := Config(base, s)
	if err != nil {
		return r, err
	}
	if base.DatabaseURL != "" {
		if r, err = dropSchema(ctx, base.DatabaseURL, s.Name); err != nil {
			return r, err
		}
	} else if r.Items, err = countSQLite(ctx, cfg); err != nil {
		return r, err
	}
	size, err := dirSize(cfg.DataDir)
	if err != nil {
		return r, fmt.Errorf("measuring tenant %s's directory: %w", s.Name, err)
	}
	r.Bytes += size
	if err := os.RemoveAll(cfg.DataDir); err != nil {
		return r, fmt.Errorf("removing tenant %s's directory: %w", s.Name, err)
	}
	if base.QdrantURL != "" {
		r.Left = append(r.Left, "Qdrant collection "+cfg.QdrantCollection)
	}
	if base.NATSURL != "" {
		r.Left = append(r.Left, "NATS stream "+cfg.TraceStream)
	}
	return r, nil
}

func countSQLite(ctx context.Context, cfg config.Config) (int, error) {
	if _, err := os.Stat(cfg.SQLitePath()); errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	st, err := sqlite.Open(ctx, cfg.SQLitePath())
	if err != nil {
		return 0, fmt.Errorf("opening tenant %s's store to count it: %w", cfg.Tenant, err)
	}
	n, err := st.Count(ctx)
	return n, errors.Join(err, st.Close())
}

func dropSchema(ctx context.Context, databaseURL, name string) (Removed, error) {
	var r Removed
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return r, fmt.Errorf("connecting to Postgres to delete tenant %s: %w", name, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	schema := schemaName(name)
	id := pgx.Identifier{schema}.Sanitize()
	var hasItems bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, schema+".items").Scan(&hasItems); err != nil {
		return r, fmt.Errorf("looking for tenant %s's items: %w", name, err)
	}
	if hasItems {
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+id+`.items`).Scan(&r.Items); err != nil {
			return r, fmt.Errorf("counting tenant %s's items: %w", name, err)
		}
	}
	if err := conn.QueryRow(ctx, `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relkind IN ('r', 'm')`, schema).Scan(&r.Bytes); err != nil {
		return r, fmt.Errorf("measuring tenant %s's schema: %w", name, err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return r, fmt.Errorf("deleting tenant %s: %w", name, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit it does nothing
	for _, stmt := range []string{
		`DROP SCHEMA IF EXISTS ` + id + ` CASCADE`,
		`DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '` + schema + `') THEN DROP OWNED BY ` + id + `; DROP ROLE ` + id + `; END IF; END $$`,
	} {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return r, fmt.Errorf("deleting tenant %s's schema and role: %w", name, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return r, fmt.Errorf("deleting tenant %s: %w", name, err)
	}
	return r, nil
}

func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			n += info.Size()
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	return n, err
}
