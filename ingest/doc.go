// Package ingest turns sources — a folder, a git repository, a web page, a
// document — into items: one item of kind "document" per file and one of
// kind "chunk" per piece package chunk cuts it into.
//
// Every chunk's metadata names where it comes from (path or url, sha,
// line_range, source_type, repo), its text is the contextual text of
// package chunk (repository, path, heading path or declaration, then the
// raw chunk) and its content keeps the raw chunk. The document "contains"
// its chunks; each chunk "follows" the one before it; a chunk "references"
// the documents of the files its Go imports or relative Markdown links name,
// when they are in the same source.
//
// Ingestion is incremental. A per-source file index (jobs.FileState)
// records each file's blob sha (git's, computed the same way for folders),
// size, mtime and chunk count. A file whose sha is unchanged is not read
// again (for folders and worktrees, an unchanged size and mtime skip even
// the hashing); a changed file is written as one batch (its document and
// all its chunks, which the store writes whole or not at all), then the
// chunks past its new count are deleted; a deleted file loses its document
// and chunks. Before a file is written its index entry is marked pending
// (sha "") with the larger chunk count, so a run interrupted half way
// through a file redoes that file and deletes every chunk either version
// wrote. Between the batch and the deletion of a shrunk file's extra
// chunks, a reader may briefly see those extra chunks of the old version
// (their metadata sha says so).
//
// Safety: local paths must lie in an allowed root (H4R_INGEST_ROOTS);
// symlinks that leave the root are refused, and every file is opened
// through the root (os.Root), so one swapped for such a symlink after it
// was listed is refused too; URLs to addresses that are not public
// (private, loopback, link-local, shared, reserved, multicast, and NAT64
// or 6to4 forms of them: specialRanges) are refused unless allowed
// (checked at connection time, so a DNS answer cannot smuggle one in); binary files, files over
// the size limit and unreadable or corrupted files are skipped and
// reported, and the run goes on. Files that hold credentials, by their
// name (built-in names and the configured patterns, in any case) or by
// their content (gitleaks' default rules: secretScanner), are flagged
// hasCredentials, every item of them (policy then withholds them from
// every caller), or skipped. A file ingested unchanged is not read again
// unless the credential rules or settings changed since the source's last
// run: then every file is read and checked once more. A source may set default metadata for its
// items: sensitivity, restrictedToGroups, trust.
package ingest
