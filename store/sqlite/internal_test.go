package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"testing/synctest"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/embed"
	"github.com/h4r/h4r/index/bm25"
	"github.com/h4r/h4r/store/internal/sqlkit"
	"github.com/h4r/h4r/tokens"
)

var testCounter = sync.OnceValues(func() (*tokens.Counter, error) { return tokens.New(tokens.CL100K) })

// testWriteTimeout is the write deadline of a test store unless the test
// sets its own: tests that compare what writes leave must not race the
// default deadline (5 s), which a write of a few hundred linked items under
// -race on a loaded two-core machine can pass (3.7 s when idle); tests of
// the deadline set theirs with WithWriteTimeout, which comes after it.
const testWriteTimeout = 2 * time.Minute

// newTestStore opens a store in a temporary directory and closes it when t
// ends.
// newHashVectorStore is newTestStore with vectors of the hashing embedder,
// which it returns too.
func newHashVectorStore(t *testing.T) (*Store, string, *embed.Hash) {
	t.Helper()
	e, err := embed.NewHash()
	if err != nil {
		t.Fatal(err)
	}
	s, path := newTestStore(t, WithVectors(e))
	return s, path, e
}

func newTestStore(t *testing.T, opts ...Option) (*Store, string) {
	t.Helper()
	counter, err := testCounter()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "h4r.db")
	s, err := Open(t.Context(), path, append([]Option{WithTokenCounter(counter), WithLogger(discardLogger()), WithWriteTimeout(testWriteTimeout)}, opts...)...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s, path
}

// rawDB opens the store file with a plain connection, as another process
// would, for looking at or tampering with it.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", dsn(path, false, busyTimeout, SyncFull))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func appliedMigrations(t *testing.T, db *sql.DB) map[int]string {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), `SELECT version, applied_at FROM schema_migrations`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int]string{}
	for rows.Next() {
		var v int
		var at string
		if err := rows.Scan(&v, &at); err != nil {
			t.Fatal(err)
		}
		out[v] = at
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestOpenAppliesEmbeddedMigrations(t *testing.T) {
	clock := func() time.Time { return time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC) }
	s, path := newTestStore(t, WithClock(clock))
	embedded, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	all, err := sqlkit.LoadMigrations(embedded)
	if err != nil {
		t.Fatal(err)
	}
	applied := appliedMigrations(t, s.readers)
	if len(applied) != len(all) || len(all) == 0 {
		t.Fatalf("applied %v, want all %d embedded migrations", applied, len(all))
	}
	if got := applied[1]; got != formatTime(clock()) {
		t.Errorf("migration 1 applied_at = %q, want the clock's %q", got, formatTime(clock()))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Re-opening applies nothing again.
	counter, _ := testCounter()
	later := func() time.Time { return clock().Add(time.Hour) }
	s2, err := Open(t.Context(), path, WithTokenCounter(counter), WithClock(later), WithLogger(discardLogger()))
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s2.Close()
	if again := appliedMigrations(t, s2.readers); !equalMaps(again, applied) {
		t.Errorf("after reopen %v, want unchanged %v", again, applied)
	}
}

func equalMaps(a, b map[int]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// migrationSet is a fake migrations directory: 0001 creates a table, 0002
// adds a column, 0003 is broken halfway.
func migrationSet(names ...string) fstest.MapFS {
	files := map[string]string{
		"0001_first.sql":  `CREATE TABLE a (x INTEGER);`,
		"0002_second.sql": `ALTER TABLE a ADD COLUMN y TEXT; CREATE TABLE b (z INTEGER);`,
		"0003_broken.sql": `CREATE TABLE c (w INTEGER); THIS IS NOT SQL;`,
	}
	out := fstest.MapFS{}
	for _, n := range names {
		out[n] = &fstest.MapFile{Data: []byte(files[n])}
	}
	return out
}

func tableExists(t *testing.T, db *sql.DB, name string) bool {
	t.Helper()
	var n int
	if err := db.QueryRowContext(t.Context(), `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

func TestMigrate(t *testing.T) {
	log := discardLogger()
	tests := []struct {
		name        string
		steps       []fstest.MapFS // migrate runs with each in turn
		wantErr     string         // in the last step's error
		wantApplied []int
		wantTables  []string
		noTables    []string
	}{
		{"fresh file", []fstest.MapFS{migrationSet("0001_first.sql", "0002_second.sql")}, "",
			[]int{1, 2}, []string{"a", "b"}, nil},
		{"only the new migration on re-open", []fstest.MapFS{migrationSet("0001_first.sql"), migrationSet("0001_first.sql", "0002_second.sql")}, "",
			[]int{1, 2}, []string{"a", "b"}, nil},
		{"nothing new", []fstest.MapFS{migrationSet("0001_first.sql"), migrationSet("0001_first.sql")}, "",
			[]int{1}, []string{"a"}, []string{"b"}},
		{"failed migration rolls back alone", []fstest.MapFS{migrationSet("0001_first.sql", "0002_second.sql", "0003_broken.sql")}, "applying migration 3 (broken)",
			[]int{1, 2}, []string{"a", "b"}, []string{"c"}},
		{"file newer than the binary", []fstest.MapFS{migrationSet("0001_first.sql", "0002_second.sql"), migrationSet("0001_first.sql")}, "newer than this binary",
			[]int{1, 2}, []string{"a", "b"}, nil},
		{"bad file name", []fstest.MapFS{{"first.sql": &fstest.MapFile{Data: []byte("SELECT 1")}}}, "0001_what.sql",
			nil, nil, nil},
		{"duplicate version", []fstest.MapFS{{"0001_a.sql": &fstest.MapFile{Data: []byte("SELECT 1")}, "01_b.sql": &fstest.MapFile{Data: []byte("SELECT 1")}}}, "share version 1",
			nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := rawDB(t, filepath.Join(t.TempDir(), "m.db"))
			db.SetMaxOpenConns(1)
			var err error
			for _, step := range tt.steps {
				err = migrate(t.Context(), db, step, time.Now, log)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("migrate: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("migrate error %v, want one containing %q", err, tt.wantErr)
			}
			if tt.wantApplied != nil {
				var got []int
				for v := range appliedMigrations(t, db) {
					got = append(got, v)
				}
				slices.Sort(got)
				if !slices.Equal(got, tt.wantApplied) {
					t.Errorf("applied %v, want %v", got, tt.wantApplied)
				}
			}
			for _, name := range tt.wantTables {
				if !tableExists(t, db, name) {
					t.Errorf("table %s is missing", name)
				}
			}
			for _, name := range tt.noTables {
				if tableExists(t, db, name) {
					t.Errorf("table %s exists, want it rolled back or never made", name)
				}
			}
		})
	}
}

func TestConnectionSettings(t *testing.T) {
	s, _ := newTestStore(t)
	tests := []struct {
		name   string
		db     *sql.DB
		pragma string
		want   string
	}{
		{"writer journal mode", s.writer, "journal_mode", "wal"},
		{"writer foreign keys", s.writer, "foreign_keys", "1"},
		{"writer busy timeout", s.writer, "busy_timeout", "5000"},
		{"reader journal mode", s.readers, "journal_mode", "wal"},
		{"reader foreign keys", s.readers, "foreign_keys", "1"},
		{"reader busy timeout", s.readers, "busy_timeout", "5000"},
		{"reader is query only", s.readers, "query_only", "1"},
		{"writer is not query only", s.writer, "query_only", "0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got string
			if err := tt.db.QueryRowContext(t.Context(), "PRAGMA "+tt.pragma).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("PRAGMA %s = %q, want %q", tt.pragma, got, tt.want)
			}
		})
	}
}

// A write that fails inside SQLite in the middle of a batch (here a
// trigger another process installed) must leave nothing of the batch.
func TestUpsertRollsBackOnWriteFailure(t *testing.T) {
	s, path := newTestStore(t)
	if err := s.WarmFullText(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Upsert(t.Context(), []h4r.Item{{ID: "keep", Text: "kept text"}}); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	if _, err := db.ExecContext(t.Context(), `CREATE TRIGGER poison BEFORE INSERT ON items
		WHEN new.id = 'poison' BEGIN SELECT RAISE(ABORT, 'poisoned item'); END`); err != nil {
		t.Fatal(err)
	}
	db.Close()

	batch := []h4r.Item{
		{ID: "keep", Text: "replaced text", Metadata: h4r.Metadata{Tags: []string{"x"}}},
		{ID: "fresh", Text: "fresh text", Links: []h4r.Link{{Type: "fixes", Target: "keep"}}},
		{ID: "poison", Text: "poison text"},
		{ID: "late", Text: "late text"},
	}
	_, err := s.Upsert(t.Context(), batch)
	if err == nil || !strings.Contains(err.Error(), "poisoned item") {
		t.Fatalf("Upsert error = %v, want the trigger's", err)
	}
	if code := h4r.ErrorCode(err); code != h4r.EINTERNAL {
		t.Errorf("error code %s, want internal: the input was valid", code)
	}
	if n, err := s.Count(t.Context()); err != nil || n != 1 {
		t.Errorf("Count = %d, %v; want 1", n, err)
	}
	kept, err := s.Get(t.Context(), "keep")
	if err != nil {
		t.Fatal(err)
	}
	if kept.Text != "kept text" || kept.Metadata.Version != 1 {
		t.Errorf("keep changed: %q version %d", kept.Text, kept.Metadata.Version)
	}
	var links, tags int
	if err := s.readers.QueryRowContext(t.Context(), `SELECT (SELECT count(*) FROM links), (SELECT count(*) FROM item_tags)`).Scan(&links, &tags); err != nil {
		t.Fatal(err)
	}
	if links != 0 || tags != 0 {
		t.Errorf("%d links and %d tags left by the failed batch", links, tags)
	}
	checkTextIndex(t, s)
}

// checkTextIndex compares the in-memory full-text index, as this
// process's writes left it, with one built afresh from the items table:
// the same rows, and the same top hits for every word in the file.
func checkTextIndex(t *testing.T, s *Store) {
	t.Helper()
	ctx := t.Context()
	fresh := &Store{readers: s.readers}
	if err := fresh.WarmFullText(ctx); err != nil {
		t.Fatal(err)
	}
	live := &s.text
	live.mu.RLock()
	loaded, ids := live.loaded, maps.Collect(live.ids.All())
	live.mu.RUnlock()
	if !loaded {
		t.Fatal("the full-text index is not loaded: the writes did not update it")
	}
	if fileIDs := maps.Collect(fresh.text.ids.All()); !maps.Equal(ids, fileIDs) {
		t.Errorf("index rows %v, the file's %v", ids, fileIDs)
	}
	words := map[string]bool{}
	rows, err := s.readers.QueryContext(ctx, `SELECT text FROM items`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var text string
		if err := rows.Scan(&text); err != nil {
			t.Fatal(err)
		}
		for _, w := range strings.Fields(text) {
			words[w] = true
		}
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		t.Fatal(err)
	}
	for w := range words {
		terms := bm25.Query(s.analyzer.Terms(w))
		got, err := s.text.search(ctx, terms, 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, err := fresh.text.search(ctx, terms, 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%q: index hits %v, the file's %v", w, got, want)
		}
	}
}

// The in-memory full-text index follows inserts, replaces with and without
// a text change, deletes, a replace and a delete in one write, and an id
// repeated in a batch, in place: the index takes a document out with the
// analysis of the text the write replaced, and checkTextIndex fails when
// an update left it unloaded.
func TestFullTextIndexStaysInSync(t *testing.T) {
	s, _ := newTestStore(t)
	ctx := t.Context()
	if err := s.WarmFullText(ctx); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		do   func() error
	}{
		{"insert", func() error {
			_, err := s.Upsert(ctx, []h4r.Item{{ID: "a", Text: "alpha one"}, {ID: "b", Text: "beta two"}, {ID: "c", Text: "gamma"}})
			return err
		}},
		{"replace with new text", func() error {
			_, err := s.Upsert(ctx, []h4r.Item{{ID: "a", Text: "alpha changed"}})
			return err
		}},
		{"replace with the same text", func() error {
			_, err := s.Upsert(ctx, []h4r.Item{{ID: "b", Text: "beta two", Kind: "other"}})
			return err
		}},
		{"delete", func() error { return s.Delete(ctx, "c") }},
		{"replace and delete in one write", func() error {
			if _, err := s.Upsert(ctx, []h4r.Item{{ID: "e", Text: "epsilon gone"}, {ID: "f", Text: "phi"}}); err != nil {
				return err
			}
			_, err := s.Replace(ctx, []h4r.Item{{ID: "f", Text: "phi again"}, {ID: "g", Text: "new"}}, []string{"e", "absent"})
			return err
		}},
		{"same id three times in a batch", func() error {
			_, err := s.Upsert(ctx, []h4r.Item{{ID: "d", Text: "x"}, {ID: "d", Text: "y"}, {ID: "d", Text: "x"}})
			return err
		}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if err := st.do(); err != nil {
				t.Fatal(err)
			}
			checkTextIndex(t, s)
		})
	}
}

func TestDiacriticsAreIgnored(t *testing.T) {
	s, _ := newTestStore(t)
	if _, err := s.Upsert(t.Context(), []h4r.Item{{ID: "fr", Text: "Le café a rejeté le résumé"}, {ID: "en", Text: "plain cafe resume"}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		query string
	}{
		{"plain finds accented", "cafe resume"},
		{"accented finds plain", "CAFÉ RÉSUMÉ"},
		{"combining accents", "cafe\u0301"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hits, err := s.FullText().Generate(t.Context(), h4r.CandidateQuery{Text: tt.query})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range hits {
				got = append(got, h.Item.ID)
			}
			slices.Sort(got)
			if !slices.Equal(got, []string{"en", "fr"}) {
				t.Errorf("Generate(%q) = %v, want both items", tt.query, got)
			}
		})
	}
}

// The background flush writes accesses once per interval. synctest's fake
// clock makes "after one interval" exact without sleeping.
func TestAccessFlushedInBackground(t *testing.T) {
	if _, err := testCounter(); err != nil { // load outside the bubble
		t.Fatal(err)
	}
	synctest.Test(t, func(t *testing.T) {
		s, _ := newTestStore(t, WithAccessFlushInterval(time.Minute), WithClock(time.Now))
		if _, err := s.Upsert(t.Context(), []h4r.Item{{ID: "a", Text: "alpha"}}); err != nil {
			t.Fatal(err)
		}
		s.RecordAccess([]string{"a", "a"})
		recordedAt := time.Now()
		accessCount := func() (int64, time.Time) {
			it, err := s.Get(t.Context(), "a")
			if err != nil {
				t.Fatal(err)
			}
			return it.Metadata.AccessCount, it.Metadata.LastAccessedAt
		}

		time.Sleep(30 * time.Second)
		synctest.Wait()
		if n, _ := accessCount(); n != 0 {
			t.Errorf("accessCount = %d before the first interval ended, want 0 (still pending)", n)
		}
		time.Sleep(31 * time.Second)
		synctest.Wait()
		n, last := accessCount()
		if n != 2 {
			t.Errorf("accessCount = %d after one interval, want 2", n)
		}
		if !last.Equal(recordedAt.UTC()) {
			t.Errorf("lastAccessedAt = %v, want the time of the access %v", last, recordedAt.UTC())
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// RecordAccess from many goroutines, some after Close has begun, must lose
// no access recorded before Close and must not race.
func TestRecordAccessConcurrently(t *testing.T) {
	s, path := newTestStore(t, WithAccessFlushInterval(time.Millisecond))
	if _, err := s.Upsert(t.Context(), []h4r.Item{{ID: "a", Text: "alpha"}, {ID: "b", Text: "beta"}}); err != nil {
		t.Fatal(err)
	}
	const goroutines, each = 8, 200
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range each {
				s.RecordAccess([]string{"a", "b", "ghost"})
			}
		})
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var a, b int64
	if err := rawDB(t, path).QueryRowContext(t.Context(),
		`SELECT (SELECT access_count FROM items WHERE id = 'a'), (SELECT access_count FROM items WHERE id = 'b')`).Scan(&a, &b); err != nil {
		t.Fatal(err)
	}
	if a != goroutines*each || b != goroutines*each {
		t.Errorf("access counts a=%d b=%d, want %d each", a, b, goroutines*each)
	}
}

func TestOpenRejects(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "plain-file")
	if err := writeFile(file); err != nil {
		t.Fatal(err)
	}
	counter, err := testCounter()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		path      string
		opts      []Option
		wantField string // "" for an error that is not about input
	}{
		{"empty path", "", nil, "path"},
		{"blank path", "  ", nil, "path"},
		{"in-memory database", ":memory:", nil, "path"},
		{"uri", "file:x.db?mode=memory", nil, "path"},
		{"zero flush interval", filepath.Join(dir, "a.db"), []Option{WithAccessFlushInterval(0)}, "accessFlushInterval"},
		{"nil clock", filepath.Join(dir, "b.db"), []Option{WithClock(nil)}, "clock"},
		{"nil logger", filepath.Join(dir, "c.db"), []Option{WithLogger(nil)}, "logger"},
		{"parent is a file", filepath.Join(file, "h4r.db"), nil, ""},
		{"path is not a database", file, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Open(t.Context(), tt.path, append([]Option{WithTokenCounter(counter)}, tt.opts...)...)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded, want an error")
			}
			var e *h4r.Error
			isInput := errors.As(err, &e) && e.Code == h4r.EINVALID
			switch {
			case tt.wantField != "" && (!isInput || e.Field != tt.wantField):
				t.Errorf("Open error %v, want invalid_argument on field %s", err, tt.wantField)
			case tt.wantField == "" && isInput:
				t.Errorf("Open error %v is invalid_argument, want an internal error", err)
			}
		})
	}
}

func TestClockStampsItems(t *testing.T) {
	now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.FixedZone("X", 3600))
	s, _ := newTestStore(t, WithClock(func() time.Time { return now }))
	if _, err := s.Upsert(context.Background(), []h4r.Item{{ID: "a", Text: "alpha"}}); err != nil {
		t.Fatal(err)
	}
	it, err := s.Get(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		got  time.Time
	}{
		{"createdAt default", it.Metadata.CreatedAt},
		{"updatedAt", it.Metadata.UpdatedAt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.got.Equal(now) || tt.got.Location() != time.UTC {
				t.Errorf("got %v, want %v in UTC", tt.got, now.UTC())
			}
		})
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// writeFile writes a file that is not a database.
func writeFile(path string) error {
	return os.WriteFile(path, []byte("this is not an SQLite database, just some text that is long enough"), 0o600)
}

// Open builds a URI from the path; characters that mean something in a URI
// must still name the file the caller gave.
func TestOpenPathWithURICharacters(t *testing.T) {
	counter, err := testCounter()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		dir  string
	}{
		{"space", "with space"},
		{"question mark", "what?mode=memory"},
		{"hash", "hash#fragment"},
		{"percent", "per%20cent"},
		{"unicode", "ünïcödé"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tt.dir, "h4r.db")
			s, err := Open(t.Context(), path, WithTokenCounter(counter), WithLogger(discardLogger()))
			if err != nil {
				t.Fatalf("Open(%q): %v", path, err)
			}
			if _, err := s.Upsert(t.Context(), []h4r.Item{{ID: "a", Text: "alpha"}}); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if info, err := os.Stat(path); err != nil || info.Size() == 0 {
				t.Fatalf("store file %q: %v (size %v)", path, err, info)
			}
		})
	}
}

// TestSeqIDsAgreesWithMap drives the text index's seq → id map through
// random sets, replaces with the same id and with another, and deletes,
// and checks it against a Go map after every step, and that the ids no
// row holds never outnumber the ids held by more than one.
func TestSeqIDsAgreesWithMap(t *testing.T) {
	for _, tc := range []struct {
		name        string
		seqs, steps int
		deletes     int // in 10
	}{
		{"few seqs, many deletes", 20, 3000, 5},
		{"many seqs, few deletes", 2000, 6000, 1},
		{"only sets", 500, 2000, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.seqs), uint64(tc.steps)))
			var m seqIDs
			want := map[uint32]string{}
			fresh := uint32(10 * tc.seqs) // seqs for add, which takes a seq that holds no id
			for step := range tc.steps {
				seq := 1 + rng.Uint32N(uint32(tc.seqs))
				switch r := rng.IntN(10); {
				case r < tc.deletes:
					m.Delete(seq)
					delete(want, seq)
				case r == 9 && want[seq] != "": // the row replaced, its id kept
					m.Set(seq, want[seq])
				default:
					id := fmt.Sprintf("id-%d-%d", seq, step)
					if step%3 == 0 {
						fresh++
						m.add(fresh, []byte(id)) // a rebuild's row
						want[fresh] = id
						break
					}
					m.Set(seq, id)
					want[seq] = id
				}
				if m.dead > m.num.Len()+1 {
					t.Fatalf("step %d: %d ids no row holds, %d held", step, m.dead, m.num.Len())
				}
				if got := maps.Collect(m.All()); !maps.Equal(got, want) {
					t.Fatalf("step %d: %v, want %v", step, got, want)
				}
				if got := m.Get(seq); got != want[seq] {
					t.Fatalf("step %d: Get(%d) = %q, want %q", step, seq, got, want[seq])
				}
			}
		})
	}
}
