// Package jobs runs background work (source ingestion, index rebuilds)
// with progress, persisted so that a job survives a restart.
//
// A job's record (state, progress, the request that started it) is written
// to a SQL database when it starts, as it progresses and when it ends: the
// SQLite file jobs.db in the data directory, or the Postgres database of
// DATABASE_URL (tables h4r_jobs and h4r_source_files). When the process
// stops during a job, the record stays "running"; Runner.Resume, called at
// start-up, runs it again when its kind is resumable (ingestion is: it is
// idempotent per file, see package ingest) and otherwise marks it failed
// with "interrupted by a restart", so that no job is left half-applied
// without saying so.
//
// The same database holds the per-source file index that incremental
// ingestion compares against (FileState): path, blob sha, size, mtime and
// chunk count of every file a source last wrote.
package jobs
