package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
)

// Backup writes a consistent copy of the store to path while it serves:
// VACUUM INTO reads one snapshot of the file (readers and the writer go
// on; a write committed after the snapshot began is not in the copy) and
// writes a compact database that opens as a store of its own. path must
// not exist, so that a backup never overwrites anything.
func (s *Store) Backup(ctx context.Context, path string) error {
	if path == "" {
		return errors.New("backing up the store: no file given")
	}
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("backing up the store: %s already exists", path)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("backing up the store: %w", err)
	}
	// A connection of its own: the readers are query_only, which VACUUM
	// INTO refuses, and the one writer must stay free for writes.
	u := url.URL{Scheme: "file", Path: s.path, RawQuery: url.Values{"_pragma": {"busy_timeout(5000)"}}.Encode()}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return fmt.Errorf("backing up the store: %w", err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", path); err != nil {
		return fmt.Errorf("backing up the store to %s: %w", path, err)
	}
	return nil
}
