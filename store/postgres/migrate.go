package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/h4r/h4r/store/internal/sqlkit"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

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
	all, err := sqlkit.LoadMigrations(sub)
	if err != nil {
		return err
	}
	return applyMigrations(ctx, pool, all, log)
}

func applyMigrations(ctx context.Context, pool *pgxpool.Pool, all []sqlkit.Migration, log *slog.Logger) (err error) {
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
	if latest := latestVersion(all); current > latest {
		return fmt.Errorf("schema %q is at version %d, newer than this binary knows (%d): upgrade h4r", *schema, current, latest)
	}
	for _, m := range all {
		if m.Version <= current {
			continue
		}
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			return fmt.Errorf("applying migration %d (%s): %w", m.Version, m.Name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
			return fmt.Errorf("recording migration %d (%s): %w", m.Version, m.Name, err)
		}
		log.InfoContext(ctx, "applying schema migration", "version", m.Version, "name", m.Name, "schema", *schema)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("committing the migration: %w", err)
	}
	return nil
}

func latestVersion(ms []sqlkit.Migration) int {
	if len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].Version
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
