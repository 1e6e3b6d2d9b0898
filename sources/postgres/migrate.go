package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations reads every *.sql file in the root of fsys, ordered by
// version. Two files with one version are an error.
func loadMigrations(fsys fs.FS) ([]migration, error) {
	paths, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, fmt.Errorf("listing migrations: %w", err)
	}
	var out []migration
	for _, p := range paths {
		number, name, ok := strings.Cut(strings.TrimSuffix(path.Base(p), ".sql"), "_")
		version, err := strconv.Atoi(number)
		if !ok || err != nil || version <= 0 {
			return nil, fmt.Errorf("migration file %s: name must look like 0001_what.sql", p)
		}
		body, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil, fmt.Errorf("reading migration %s: %w", p, err)
		}
		out = append(out, migration{version: version, name: name, sql: string(body)})
	}
	slices.SortFunc(out, func(a, b migration) int { return a.version - b.version })
	for i := 1; i < len(out); i++ {
		if out[i].version == out[i-1].version {
			return nil, fmt.Errorf("migrations %s and %s share version %d", out[i-1].name, out[i].name, out[i].version)
		}
	}
	return out, nil
}

// migrate applies the embedded migrations the schema has not seen, all in
// one transaction that first takes an advisory lock keyed by the schema:
// replicas starting at once queue on the lock, and the ones after the
// first find nothing left to do. A failed migration leaves the schema as it
// was (Postgres DDL is transactional).
func migrate(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return fmt.Errorf("reading embedded migrations: %w", err)
	}
	migrations, err := loadMigrations(sub)
	if err != nil {
		return err
	}
	return applyMigrations(ctx, pool, migrations, log)
}

func applyMigrations(ctx context.Context, pool *pgxpool.Pool, migrations []migration, log *slog.Logger) (err error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("beginning the migration: %w", err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, rollback(tx))
		}
	}()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('h4r.migrate:' || current_schema()))`); err != nil {
		return fmt.Errorf("taking the migration lock: %w", err)
	}
	var schema *string
	if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return fmt.Errorf("reading the current schema: %w", err)
	}
	if schema == nil {
		var path string
		if err := tx.QueryRow(ctx, `SELECT current_setting('search_path')`).Scan(&path); err != nil {
			return fmt.Errorf("reading search_path: %w", err)
		}
		return fmt.Errorf("no schema to create the tables in: search_path (%s) names no schema that exists and this role may use (it needs USAGE and CREATE on it)", path)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now()
	)`); err != nil {
		return fmt.Errorf("creating schema_migrations in schema %q: %w", *schema, err)
	}
	var current int
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return fmt.Errorf("reading the schema version: %w", err)
	}
	if latest := latestVersion(migrations); current > latest {
		return fmt.Errorf("schema %q is at version %d, newer than this binary knows (%d): upgrade h4r", *schema, current, latest)
	}
	for _, m := range migrations {
		if m.version <= current {
			continue
		}
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return fmt.Errorf("applying migration %d (%s): %w", m.version, m.name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
			return fmt.Errorf("recording migration %d (%s): %w", m.version, m.name, err)
		}
		log.InfoContext(ctx, "applying schema migration", "version", m.version, "name", m.name, "schema", *schema)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("committing the migration: %w", err)
	}
	return nil
}

func latestVersion(ms []migration) int {
	if len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].version
}

// schemaVersion returns the latest applied migration, 0 for a schema that
// has none.
func schemaVersion(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	var v int
	err := pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v)
	var pg *pgconn.PgError
	if errors.As(err, &pg) && pg.Code == "42P01" { // undefined_table: never migrated
		return 0, nil
	}
	return v, err
}

// rollback rolls tx back; a transaction that is already finished is fine.
// It uses a fresh context: the request's may be the reason for the
// rollback.
func rollback(tx pgx.Tx) error {
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	if err := tx.Rollback(ctx); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
		return fmt.Errorf("rolling back: %w", err)
	}
	return nil
}
