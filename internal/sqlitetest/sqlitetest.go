package sqlitetest

import (
	"context"
	"database/sql"
	"sync"
	"testing"

	_ "modernc.org/sqlite" // the driver the embedded store uses
)

// HoldWriteLock begins an IMMEDIATE transaction on the SQLite file at path
// and holds it until release is called or t ends. The connection waits up
// to five seconds for a lock another connection holds when it begins.
// release may be called more than once.
func HoldWriteLock(t testing.TB, path string) (release func()) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(context.Background())
	if err != nil {
		db.Close()
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		conn.Close()
		db.Close()
		t.Fatalf("taking the write lock of %s: %v", path, err)
	}
	release = sync.OnceFunc(func() {
		if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
			t.Errorf("releasing the write lock of %s: %v", path, err)
		}
		conn.Close()
		db.Close()
	})
	t.Cleanup(release)
	return release
}
