package jobs

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	_ "modernc.org/sqlite"             // registers the "sqlite" driver

	"github.com/h4r/h4r"
)

// SQLStore keeps job records and the source file index in SQLite or
// Postgres. The statements are written once, with $n placeholders, which
// both accept.
type SQLStore struct {
	db *sql.DB
}

const schema = `
CREATE TABLE IF NOT EXISTS h4r_jobs (
	id TEXT PRIMARY KEY,
	kind TEXT NOT NULL,
	state TEXT NOT NULL,
	record TEXT NOT NULL,
	updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS h4r_jobs_state ON h4r_jobs (state);
CREATE TABLE IF NOT EXISTS h4r_source_files (
	source TEXT NOT NULL,
	path TEXT NOT NULL,
	sha TEXT NOT NULL,
	size BIGINT NOT NULL,
	mtime BIGINT NOT NULL,
	chunks INTEGER NOT NULL,
	PRIMARY KEY (source, path)
);`

// OpenSQLite opens (creating) jobs.db in dir.
func OpenSQLite(ctx context.Context, dir string) (*SQLStore, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("creating the data directory for jobs: %w", err)
	}
	path := filepath.Join(dir, "jobs.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	db.SetMaxOpenConns(1) // one writer; the records are small
	return newSQLStore(ctx, db, path)
}

// OpenPostgres opens the tables in the database of url.
func OpenPostgres(ctx context.Context, url string) (*SQLStore, error) {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return nil, fmt.Errorf("opening the jobs tables in Postgres: %w", err)
	}
	db.SetMaxOpenConns(2)
	if err := createPostgresTables(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("creating the jobs tables in Postgres: %w", err)
	}
	return &SQLStore{db: db}, nil
}

// createPostgresTables creates the tables under an advisory lock keyed by
// the schema: replicas starting together would otherwise race their CREATE
// TABLE IF NOT EXISTS, and all but one fail on the catalog's unique index.
func createPostgresTables(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext('h4r.jobs:' || current_schema()))`); err != nil {
		return fmt.Errorf("taking the lock: %w", err)
	}
	if _, err := tx.ExecContext(ctx, schema); err != nil {
		return err
	}
	return tx.Commit()
}

func newSQLStore(ctx context.Context, db *sql.DB, where string) (*SQLStore, error) {
	if _, err := db.ExecContext(ctx, schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("creating the jobs tables in %s: %w", where, err)
	}
	return &SQLStore{db: db}, nil
}

// Close closes the database.
func (s *SQLStore) Close() error { return s.db.Close() }

// CreateJob stores a new job.
func (s *SQLStore) CreateJob(ctx context.Context, j Job) error {
	rec, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("encoding job %s: %w", j.ID, err)
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO h4r_jobs (id, kind, state, record, updated_at) VALUES ($1, $2, $3, $4, $5)`,
		j.ID, j.Kind, j.State, string(rec), j.UpdatedAt.Format(time.RFC3339Nano))
	if err != nil {
		return fmt.Errorf("storing job %s: %w", j.ID, err)
	}
	return nil
}

// UpdateJob replaces a job's record.
func (s *SQLStore) UpdateJob(ctx context.Context, j Job) error {
	rec, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("encoding job %s: %w", j.ID, err)
	}
	res, err := s.db.ExecContext(ctx, `UPDATE h4r_jobs SET state = $2, record = $3, updated_at = $4 WHERE id = $1`,
		j.ID, j.State, string(rec), j.UpdatedAt.Format(time.RFC3339Nano))
	if err != nil {
		return fmt.Errorf("updating job %s: %w", j.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return h4r.Errorf(h4r.ENOTFOUND, "id", "no job with id %q", j.ID)
	}
	return nil
}

// GetJob returns a job, or an *h4r.Error not_found.
func (s *SQLStore) GetJob(ctx context.Context, id string) (Job, error) {
	var rec string
	err := s.db.QueryRowContext(ctx, `SELECT record FROM h4r_jobs WHERE id = $1`, id).Scan(&rec)
	if errors.Is(err, sql.ErrNoRows) {
		return Job{}, h4r.Errorf(h4r.ENOTFOUND, "id", "no job with id %q", id)
	}
	if err != nil {
		return Job{}, fmt.Errorf("reading job %s: %w", id, err)
	}
	var j Job
	if err := json.Unmarshal([]byte(rec), &j); err != nil {
		return Job{}, fmt.Errorf("decoding job %s: %w", id, err)
	}
	return j, nil
}

// UnfinishedJobs returns the jobs queued, running or scheduled, oldest
// first.
func (s *SQLStore) UnfinishedJobs(ctx context.Context) ([]Job, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT record FROM h4r_jobs WHERE state IN ('queued', 'running', 'scheduled') ORDER BY updated_at, id`)
	if err != nil {
		return nil, fmt.Errorf("listing unfinished jobs: %w", err)
	}
	defer rows.Close()
	var out []Job
	for rows.Next() {
		var rec string
		if err := rows.Scan(&rec); err != nil {
			return nil, fmt.Errorf("listing unfinished jobs: %w", err)
		}
		var j Job
		if err := json.Unmarshal([]byte(rec), &j); err != nil {
			return nil, fmt.Errorf("decoding an unfinished job: %w", err)
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// RecentJobs returns the jobs updated last, newest first, at most limit.
func (s *SQLStore) RecentJobs(ctx context.Context, limit int) ([]Job, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT record FROM h4r_jobs ORDER BY updated_at DESC, id DESC LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("listing recent jobs: %w", err)
	}
	defer rows.Close()
	var out []Job
	for rows.Next() {
		var rec string
		if err := rows.Scan(&rec); err != nil {
			return nil, fmt.Errorf("listing recent jobs: %w", err)
		}
		var j Job
		if err := json.Unmarshal([]byte(rec), &j); err != nil {
			return nil, fmt.Errorf("decoding a recent job: %w", err)
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// FileState is what a source last wrote for one file.
type FileState struct {
	Path   string
	SHA    string // git blob sha of the content; "" while a write of the file is under way
	Size   int64
	MTime  int64 // unix nanoseconds, for the fast unchanged check of folders
	Chunks int   // chunk items written (ids 0…Chunks-1)
}

// Files returns a source's file index by path.
func (s *SQLStore) Files(ctx context.Context, source string) (map[string]FileState, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT path, sha, size, mtime, chunks FROM h4r_source_files WHERE source = $1`, source)
	if err != nil {
		return nil, fmt.Errorf("reading the file index of %s: %w", source, err)
	}
	defer rows.Close()
	out := map[string]FileState{}
	for rows.Next() {
		var f FileState
		if err := rows.Scan(&f.Path, &f.SHA, &f.Size, &f.MTime, &f.Chunks); err != nil {
			return nil, fmt.Errorf("reading the file index of %s: %w", source, err)
		}
		out[f.Path] = f
	}
	return out, rows.Err()
}

// PutFile records a file's state.
func (s *SQLStore) PutFile(ctx context.Context, source string, f FileState) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO h4r_source_files (source, path, sha, size, mtime, chunks) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (source, path) DO UPDATE SET sha = excluded.sha, size = excluded.size, mtime = excluded.mtime, chunks = excluded.chunks`,
		source, f.Path, f.SHA, f.Size, f.MTime, f.Chunks)
	if err != nil {
		return fmt.Errorf("recording %s in the file index of %s: %w", f.Path, source, err)
	}
	return nil
}

// DeleteFile forgets a file.
func (s *SQLStore) DeleteFile(ctx context.Context, source, path string) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM h4r_source_files WHERE source = $1 AND path = $2`, source, path); err != nil {
		return fmt.Errorf("removing %s from the file index of %s: %w", path, source, err)
	}
	return nil
}
