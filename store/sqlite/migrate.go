package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"time"

	"github.com/h4r/h4r/store/internal/sqlkit"
)

// migrationFiles holds the schema migrations, named NNNN_what.sql. A
// migration, once released, is never edited: a change is a new file.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrate applies the migrations of fsys that db has not applied yet, each
// in its own transaction together with its schema_migrations row, so that a
// failed migration leaves the file at the previous version. The writer's
// transactions begin IMMEDIATE, so two processes opening one file at once
// apply each migration once.
func migrate(ctx context.Context, db *sql.DB, fsys fs.FS, now func() time.Time, log *slog.Logger) error {
	all, err := sqlkit.LoadMigrations(fsys)
	if err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at TEXT NOT NULL
	) STRICT`); err != nil {
		return fmt.Errorf("creating schema_migrations: %w", err)
	}
	var current int
	if err := db.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return fmt.Errorf("reading schema version: %w", err)
	}
	if latest := latestVersion(all); current > latest {
		return fmt.Errorf("database schema is at version %d, newer than this binary knows (%d): upgrade h4r", current, latest)
	}
	for _, m := range all {
		if m.Version <= current {
			continue
		}
		applied, err := applyMigration(ctx, db, m, now().UTC())
		if err != nil {
			return err
		}
		if applied {
			log.InfoContext(ctx, "applied schema migration", "version", m.Version, "name", m.Name)
		}
	}
	return nil
}

func latestVersion(ms []sqlkit.Migration) int {
	if len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].Version
}

// applyMigration runs one migration unless another process applied it
// since we read the schema version; it reports whether it ran.
func applyMigration(ctx context.Context, db *sql.DB, m sqlkit.Migration, now time.Time) (applied bool, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("beginning migration %d (%s): %w", m.Version, m.Name, err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, rollback(tx))
		}
	}()
	var done bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = ?)`, m.Version).Scan(&done); err != nil {
		return false, fmt.Errorf("checking migration %d (%s): %w", m.Version, m.Name, err)
	}
	if done {
		return false, tx.Commit()
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return false, fmt.Errorf("applying migration %d (%s): %w", m.Version, m.Name, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		m.Version, m.Name, formatTime(now)); err != nil {
		return false, fmt.Errorf("recording migration %d (%s): %w", m.Version, m.Name, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("committing migration %d (%s): %w", m.Version, m.Name, err)
	}
	return true, nil
}

// rollback rolls tx back, ignoring the error of a transaction that is
// already finished.
func rollback(tx *sql.Tx) error {
	if err := tx.Rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) {
		return fmt.Errorf("rolling back: %w", err)
	}
	return nil
}
