package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/store/sqlite"
)

// TestBackupWhileWriting: a backup taken while a writer goes on opens as a
// store holding every item committed before it began, and a backup never
// overwrites a file.
func TestBackupWhileWriting(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "h4r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	batch := func(from, n int) []h4r.Item {
		var items []h4r.Item
		for i := from; i < from+n; i++ {
			items = append(items, h4r.Item{ID: fmt.Sprintf("m-%04d", i), Kind: "note", Text: fmt.Sprintf("memory number %d", i)})
		}
		return items
	}
	if _, err := st.Upsert(ctx, batch(0, 200)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // writes on while the backup runs
		defer wg.Done()
		for i := 200; i < 400; i += 20 {
			if _, err := st.Upsert(ctx, batch(i, 20)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	out := filepath.Join(dir, "backup.db")
	if err := st.Backup(ctx, out); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	copyStore, err := sqlite.Open(ctx, out)
	if err != nil {
		t.Fatalf("opening the backup: %v", err)
	}
	defer copyStore.Close()
	n, err := copyStore.Count(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n < 200 || n > 400 {
		t.Errorf("the backup holds %d items, want the 200 written before it and at most 400", n)
	}
	if _, err := copyStore.Get(ctx, "m-0199"); err != nil {
		t.Errorf("an item committed before the backup is missing from it: %v", err)
	}
	if err := st.Backup(ctx, out); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("a second backup to the same file: %v, want already exists", err)
	}
}
