package sqlite_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"

	"github.com/h4r/h4r/sources/sqlite"
	"github.com/h4r/h4r/sources/storetest"
	"github.com/h4r/h4r/tokens"
)

// sharedCounter loads cl100k_base once for all the stores the tests open.
var sharedCounter = sync.OnceValues(func() (*tokens.Counter, error) { return tokens.New(tokens.CL100K) })

// openAt opens the store at path and closes it when t ends.
func openAt(t testing.TB, path string, opts ...sqlite.Option) *sqlite.Store {
	t.Helper()
	counter, err := sharedCounter()
	if err != nil {
		t.Fatal(err)
	}
	quiet := sqlite.WithLogger(slog.New(slog.DiscardHandler))
	s, err := sqlite.Open(context.Background(), path, append([]sqlite.Option{sqlite.WithTokenCounter(counter), quiet}, opts...)...)
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
	)
}
