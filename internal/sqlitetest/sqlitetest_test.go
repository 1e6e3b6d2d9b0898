package sqlitetest

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

// While the lock is held another connection cannot begin a write; once
// released, and released again, it can.
func TestHoldWriteLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h4r.db")
	other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(50)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Exec(`CREATE TABLE t (x)`); err != nil {
		t.Fatal(err)
	}
	begin := func() error {
		tx, err := other.BeginTx(context.Background(), nil)
		if err != nil {
			return err
		}
		return tx.Rollback()
	}

	release := HoldWriteLock(t, path)
	if err := begin(); err == nil {
		t.Fatal("another connection began a write while the lock was held")
	}
	release()
	release()
	if err := begin(); err != nil {
		t.Fatalf("beginning a write once the lock is released: %v", err)
	}
}
