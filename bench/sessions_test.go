package bench_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/h4r/h4r/bench"
	"github.com/h4r/h4r/conversation"
)

// copyDir copies the files of a dataset folder (one level of subfolders).
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A folder named longmemeval-mini loads with its built-in mapping: turns
// keep their session, follow the turn before them in the same session of
// the same history (by turn number, whatever the file order), questions
// carry their date and are grouped by where their evidence is.
func TestLoadSessions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "longmemeval-mini")
	copyDir(t, filepath.Join("testdata", "sessions"), dir)
	ds, err := bench.LoadBEIR(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	links := map[string][]string{}
	for _, it := range ds.Items() {
		if err := it.Validate(""); err != nil {
			t.Fatalf("%s does not make a valid item: %v", it.ID, err)
		}
		if got := conversation.Session(&it); got == "" || it.Metadata.Extra[bench.ScopeKey] == nil {
			t.Errorf("%s: session %q, scope %v; want both", it.ID, got, it.Metadata.Extra[bench.ScopeKey])
		}
		for _, l := range it.Links {
			if l.Type != "follows" {
				t.Errorf("%s: link type %q, want follows", it.ID, l.Type)
			}
			links[it.ID] = append(links[it.ID], l.Target)
		}
	}
	want := map[string][]string{"h1:a#1": {"h1:a#0"}, "h1:a#2": {"h1:a#1"}, "h1:b#1": {"h1:b#0"}, "h2:a#1": {"h2:a#0"}}
	if len(links) != len(want) {
		t.Errorf("links %v, want %v", links, want)
	}
	for id, targets := range want {
		if !slices.Equal(links[id], targets) {
			t.Errorf("%s links to %v, want %v", id, links[id], targets)
		}
	}
	cats := map[string]string{}
	for _, q := range ds.Queries {
		cats[q.ID] = q.Category
		if q.AsOf.IsZero() || q.Scope == "" {
			t.Errorf("%s: as of %v, scope %q; want both", q.ID, q.AsOf, q.Scope)
		}
	}
	if got := ds.Queries[0].AsOf; !got.Equal(time.Date(2023, 6, 1, 12, 0, 0, 0, time.UTC)) {
		t.Errorf("h1-q0 asked at %v", got)
	}
	wantCats := map[string]string{"h1-q0": bench.SessionMulti, "h1-q1": bench.SessionSingle, "h2-q0": bench.SessionSingle}
	for id, c := range wantCats {
		if cats[id] != c {
			t.Errorf("%s: category %q, want %q", id, cats[id], c)
		}
	}
}

// The same folder under another name has no built-in mapping: no
// sessions, no links, no categories.
func TestLoadSessionsNeedsTheMapping(t *testing.T) {
	ds, err := bench.LoadBEIR(filepath.Join("testdata", "sessions"), "test")
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range ds.Items() {
		if conversation.Session(&it) != "" || len(it.Links) > 0 {
			t.Errorf("%s: session %q, links %v; want none without a mapping", it.ID, conversation.Session(&it), it.Links)
		}
	}
	for _, q := range ds.Queries {
		if q.Category != "" || !q.AsOf.IsZero() {
			t.Errorf("%s: category %q, as of %v; want none", q.ID, q.Category, q.AsOf)
		}
	}
}
