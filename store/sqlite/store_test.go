package sqlite_test

import (
	"context"
	"database/sql"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/h4r/h4r/store/sqlite"
	"github.com/h4r/h4r/store/storetest"
	"github.com/h4r/h4r/tokens"
)

// sharedCounter loads cl100k_base once for all the stores the tests open.
var sharedCounter = sync.OnceValues(func() (*tokens.Counter, error) { return tokens.New(tokens.CL100K) })

// openAt opens the store at path and closes it when t ends. Its write
// deadline is the internal tests' (TestWriteTimeout) unless opts set one.
func openAt(t testing.TB, path string, opts ...sqlite.Option) *sqlite.Store {
	t.Helper()
	counter, err := sharedCounter()
	if err != nil {
		t.Fatal(err)
	}
	quiet := sqlite.WithLogger(slog.New(slog.DiscardHandler))
	s, err := sqlite.Open(context.Background(), path, append([]sqlite.Option{sqlite.WithTokenCounter(counter), quiet, sqlite.WithWriteTimeout(sqlite.TestWriteTimeout)}, opts...)...)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func openTemp(t testing.TB) *sqlite.Store {
	return openAt(t, filepath.Join(t.TempDir(), "h4r.db"))
}

func TestStoreContract(t *testing.T) {
	storetest.Run(t,
		func(t *testing.T) storetest.Store { return openTemp(t) },
		storetest.WithReopen(func(t *testing.T) func(t *testing.T) storetest.Store {
			path := filepath.Join(t.TempDir(), "nested", "dir", "h4r.db") // Open creates the directories
			return func(t *testing.T) storetest.Store { return openAt(t, path) }
		}),
		storetest.WithFailingWrites(func(t *testing.T) (storetest.Store, func(id string)) {
			path := filepath.Join(t.TempDir(), "h4r.db")
			return openAt(t, path), func(id string) { failWritesOf(t, path, id) }
		}),
		storetest.WithEncodings(func(t *testing.T) func(t *testing.T, encoding string) storetest.Store {
			path := filepath.Join(t.TempDir(), "h4r.db")
			return func(t *testing.T, encoding string) storetest.Store {
				counter, err := tokens.New(encoding)
				if err != nil {
					t.Fatal(err)
				}
				return openAt(t, path, sqlite.WithTokenCounter(counter))
			}
		}),
	)
}

// failWritesOf installs a test-only trigger, over a connection of its own,
// that makes the database refuse any write of item id.
func failWritesOf(t *testing.T, path, id string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	quoted := "'" + strings.ReplaceAll(id, "'", "''") + "'"
	for _, event := range []string{"INSERT", "UPDATE"} {
		stmt := `CREATE TRIGGER fail_` + strings.ToLower(event) + ` BEFORE ` + event + ` ON items
			WHEN NEW.id = ` + quoted + ` BEGIN SELECT RAISE(ABORT, 'test trigger refuses this item'); END`
		if _, err := db.ExecContext(t.Context(), stmt); err != nil {
			t.Fatalf("installing the failing trigger: %v", err)
		}
	}
}

func TestPackStoreContract(t *testing.T) {
	storetest.RunPacks(t, func(t *testing.T) storetest.PackStore { return openTemp(t) })
}
