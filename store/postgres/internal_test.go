package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/store/internal/sqlkit"
)

// A read whose deadline passes is cancelled in Postgres, not left running
// on a dropped connection: pgx's default would only cut the socket.
func TestDeadlineCancelsTheQueryInPostgres(t *testing.T) {
	s := newStore(t)
	marker := "h4r-cancel-" + randomHex(t, 6)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	err := s.read(ctx, func(ctx context.Context) error {
		_, err := s.pool.Exec(ctx, "SELECT pg_sleep(120) -- "+marker)
		return err
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("read returned %v, want the deadline error", err)
	}
	admin := adminConn(t)
	// The backend notices the cancel request at once; the loop only
	// absorbs a loaded machine, far within the 120 s the sleep would take.
	for wait := 10 * time.Millisecond; ; wait *= 2 {
		var running int
		err := admin.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE state = 'active' AND query LIKE '%' || $1 || '%' AND pid <> pg_backend_pid()`, marker).Scan(&running)
		if err != nil {
			t.Fatal(err)
		}
		if running == 0 {
			return
		}
		if wait > 10*time.Second {
			t.Fatalf("the query is still running in Postgres after its deadline")
		}
		time.Sleep(wait)
	}
}

func TestMigrationsFromManyReplicasAtOnce(t *testing.T) {
	dsn := newSchema(t)
	const replicas = 6
	var wg sync.WaitGroup
	errs := make([]error, replicas)
	for i := range replicas {
		wg.Go(func() {
			counter, err := testCounter()
			if err != nil {
				errs[i] = err
				return
			}
			s, err := Open(t.Context(), dsn, WithTokenCounter(counter), WithLogger(quietLogger()), WithMaxReadConns(2), WithMaxWriteConns(1))
			if err != nil {
				errs[i] = err
				return
			}
			errs[i] = s.Close()
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d: %v", i, err)
		}
	}
	from, to, err := Migrate(t.Context(), dsn, WithLogger(quietLogger()))
	if err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	all, err := sqlkit.LoadMigrations(mustSub(t))
	if err != nil {
		t.Fatal(err)
	}
	if latest := latestVersion(all); from != latest || to != latest {
		t.Errorf("Migrate went from %d to %d, want %d to %d (nothing left to do)", from, to, latest, latest)
	}
	s := openAt(t, dsn)
	var rows, distinct int
	if err := s.pool.QueryRow(t.Context(), `SELECT count(*), count(DISTINCT version) FROM schema_migrations`).Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	if rows != len(all) || distinct != len(all) {
		t.Errorf("schema_migrations holds %d rows (%d versions), want each of %d migrations once", rows, distinct, len(all))
	}
}

func TestOpenErrors(t *testing.T) {
	dsn := testDSN(t)
	admin := adminConn(t)
	role := "h4r_norights_" + randomHex(t, 4)
	if _, err := admin.Exec(t.Context(), "CREATE ROLE "+role+" LOGIN"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// After the schemas are dropped (cleanups run last first): the
		// role holds a grant on one of them until then.
		if _, err := admin.Exec(context.Background(), "DROP ROLE IF EXISTS "+role); err != nil {
			t.Errorf("dropping role %s: %v", role, err)
		}
	})
	noUsage := newSchema(t) // created by the admin role; the new role has no rights in it
	noCreate := newSchema(t)
	if _, err := admin.Exec(t.Context(), "GRANT USAGE ON SCHEMA "+schemaOf(t, noCreate)+" TO "+role); err != nil {
		t.Fatal(err)
	}
	newer := newSchema(t)
	openAt(t, newer).Close()
	if _, err := admin.Exec(t.Context(), `INSERT INTO `+schemaOf(t, newer)+`.schema_migrations (version, name) VALUES (9999, 'future')`); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name      string
		dsn       string
		wantField string // an *h4r.Error naming this field, or
		wantText  string // an error saying this
	}{
		{"empty URL", " ", "DATABASE_URL", ""},
		{"not a URL", "postgres://%zz", "DATABASE_URL", ""},
		{"unreachable server", "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=2", "", "cannot reach Postgres at 127.0.0.1:1"},
		{"schema that does not exist", withSearchPath(t, dsn, "h4r_no_such_schema_"+randomHex(t, 4)), "", "names no schema that exists and this role may use"},
		{"role without usage of the schema", withUser(t, noUsage, role), "", "names no schema that exists and this role may use"},
		{"role without create in the schema", withUser(t, noCreate, role), "", "lacks the rights"},
		{"schema newer than the binary", newer, "", "newer than this binary knows"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Open(t.Context(), tt.dsn, WithLogger(quietLogger()))
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded, want an error")
			}
			if tt.wantField != "" {
				var e *h4r.Error
				if !errors.As(err, &e) || e.Field != tt.wantField {
					t.Fatalf("Open: %v, want an *h4r.Error for %s", err, tt.wantField)
				}
				return
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Fatalf("Open: %v, want it to say %q", err, tt.wantText)
			}
		})
	}
}

func schemaOf(t *testing.T, dsn string) string {
	t.Helper()
	_, after, ok := strings.Cut(dsn, "search_path=")
	if !ok {
		t.Fatalf("no search_path in %s", dsn)
	}
	name, _, _ := strings.Cut(after, "&")
	return name
}

func withUser(t *testing.T, dsn, user string) string {
	t.Helper()
	at := strings.Index(dsn, "@")
	scheme := strings.Index(dsn, "://")
	if at < 0 || scheme < 0 {
		t.Skip("the role test needs a URL with a user (user@host)")
	}
	return dsn[:scheme+3] + user + dsn[at:]
}

func TestTransient(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"deadline", context.DeadlineExceeded, false},
		{"cancelled", fmt.Errorf("query: %w", context.Canceled), false},
		{"admin shutdown", &pgconn.PgError{Code: "57P01"}, true},
		{"server starting", &pgconn.PgError{Code: "57P03"}, true},
		{"serialization failure", &pgconn.PgError{Code: "40001"}, true},
		{"deadlock", &pgconn.PgError{Code: "40P01"}, true},
		{"too many connections", &pgconn.PgError{Code: "53300"}, true},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true},
		{"syntax error", &pgconn.PgError{Code: "42601"}, false},
		{"no rights", &pgconn.PgError{Code: "42501"}, false},
		{"refused", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, true},
		{"plain error", io.ErrUnexpectedEOF, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := transient(tt.err); got != tt.want {
				t.Errorf("transient(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

// Reads are retried after transient errors, and only after those.
func TestReadRetries(t *testing.T) {
	s := newStore(t, WithReadRetries(2, time.Millisecond))
	tests := []struct {
		name      string
		failures  []error
		wantCalls int
		wantErr   bool
	}{
		{"success at once", nil, 1, false},
		{"one lost connection", []error{&pgconn.PgError{Code: "57P01"}}, 2, false},
		{"too many transient errors", []error{&pgconn.PgError{Code: "57P01"}, &pgconn.PgError{Code: "08006"}, &pgconn.PgError{Code: "40001"}}, 3, true},
		{"a real error is not retried", []error{&pgconn.PgError{Code: "42601"}}, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			err := s.read(t.Context(), func(context.Context) error {
				calls++
				if calls <= len(tt.failures) {
					return tt.failures[calls-1]
				}
				return nil
			})
			if calls != tt.wantCalls || (err != nil) != tt.wantErr {
				t.Errorf("%d calls, error %v; want %d calls, error %v", calls, err, tt.wantCalls, tt.wantErr)
			}
		})
	}
}

// The scores are BM25: Σ idf·impact with Lucene's idf, k1 = 1.2, b = 0.75,
// computed here from the definition for a corpus whose words are their
// own lexemes.
func TestBM25Scores(t *testing.T) {
	s := newStore(t)
	docs := map[string]string{
		"d1": "alpha beta",
		"d2": "alpha alpha gamma delta",
		"d3": "beta gamma delta epsilon zeta",
		"d4": "omega",
	}
	var items []h4r.Item
	for id, text := range docs {
		items = append(items, h4r.Item{ID: id, Text: text})
	}
	if _, err := s.Upsert(t.Context(), items); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, text := range docs {
		total += len(strings.Fields(text))
	}
	avgdl := float64(total) / float64(len(docs))
	want := func(query, id string) float64 {
		score := 0.0
		for _, q := range strings.Fields(query) {
			df, tf := 0, 0
			for did, text := range docs {
				n := 0
				for _, w := range strings.Fields(text) {
					if w == q {
						n++
					}
				}
				if n > 0 {
					df++
				}
				if did == id {
					tf = n
				}
			}
			if tf > 0 {
				score += idf(int64(len(docs)), int64(df)) * float64(impact(tf, len(strings.Fields(docs[id])), avgdl))
			}
		}
		return score
	}
	for _, query := range []string{"alpha", "alpha beta", "gamma delta", "zeta alpha omega"} {
		t.Run(query, func(t *testing.T) {
			hits, err := s.FullText().Generate(t.Context(), h4r.CandidateQuery{Text: query})
			if err != nil {
				t.Fatal(err)
			}
			if len(hits) == 0 {
				t.Fatal("no hits")
			}
			for _, h := range hits {
				if w := want(query, h.Item.ID); math.Abs(h.Score-w) > 1e-5 {
					t.Errorf("%s scores %.6f, want BM25 %.6f", h.Item.ID, h.Score, w)
				}
			}
		})
	}
}

// The term cut reads only a term's best postings: the highest impacts,
// which for one word are the shortest items that hold it.
func TestTermCut(t *testing.T) {
	s := newStore(t, WithTermCut(2))
	var items []h4r.Item
	for i := range 5 {
		items = append(items, h4r.Item{ID: fmt.Sprintf("len-%d", i), Text: "needle" + strings.Repeat(" hay", i)})
	}
	if _, err := s.Upsert(t.Context(), items); err != nil {
		t.Fatal(err)
	}
	hits, err := s.FullText().Generate(t.Context(), h4r.CandidateQuery{Text: "needle"})
	if err != nil {
		t.Fatal(err)
	}
	if got := hitIDs(hits); !slices.Equal(got, []string{"len-0", "len-1"}) {
		t.Errorf("hits %v, want the two shortest items", got)
	}
}

// After replaces, deletes and writers racing, the statistics BM25 uses are
// exactly those of the items stored.
func TestStatisticsStayExact(t *testing.T) {
	s := newStore(t)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for b := range 5 {
				var batch []h4r.Item
				for i := range 6 {
					id := fmt.Sprintf("item-%d", (w*7+b*3+i)%20) // writers overlap on ids
					batch = append(batch, h4r.Item{ID: id, Text: strings.Repeat(fmt.Sprintf("word%d ", (w+i)%5), 1+b) + "common"})
				}
				if _, err := s.Upsert(t.Context(), batch); err != nil {
					t.Errorf("writer %d: %v", w, err)
				}
				if err := s.Delete(t.Context(), fmt.Sprintf("item-%d", (w+b)%20)); err != nil && h4r.ErrorCode(err) != h4r.ENOTFOUND {
					t.Errorf("writer %d delete: %v", w, err)
				}
			}
		})
	}
	wg.Wait()
	checks := []struct {
		name  string
		query string
	}{
		{"n_docs", `SELECT (SELECT sum(n_docs) FROM stats_shards) = (SELECT count(*) FROM items)`},
		{"total_len", `SELECT (SELECT sum(total_len) FROM stats_shards) = (SELECT coalesce(sum(doc_len), 0) FROM items)`},
		{"doc_len", `SELECT NOT EXISTS (SELECT 1 FROM items i WHERE doc_len <> (SELECT coalesce(sum(tf), 0) FROM postings WHERE item_seq = i.seq))`},
		{"df", `SELECT NOT EXISTS (SELECT 1 FROM terms t WHERE (SELECT coalesce(sum(df), 0) FROM term_df WHERE term_id = t.id) <> (SELECT count(*) FROM postings WHERE term_id = t.id))`},
		{"reference length is the average", `SELECT abs(avgdl_ref - s.total_len::float8 / greatest(s.n_docs, 1)) <= 0.1 * avgdl_ref
			FROM corpus_stats, (SELECT sum(n_docs) AS n_docs, sum(total_len) AS total_len FROM stats_shards) s`},
		{"no orphan postings", `SELECT NOT EXISTS (SELECT 1 FROM postings p WHERE NOT EXISTS (SELECT 1 FROM items WHERE seq = p.item_seq))`},
		{"impacts use the reference length", `SELECT NOT EXISTS (SELECT 1 FROM postings p JOIN items i ON i.seq = p.item_seq, corpus_stats s
			WHERE abs(p.impact - p.tf * 2.2 / (p.tf + 1.2 * (0.25 + 0.75 * i.doc_len / s.avgdl_ref))) > 1e-4)`},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			var ok bool
			if err := s.pool.QueryRow(t.Context(), c.query).Scan(&ok); err != nil {
				t.Fatal(err)
			}
			if !ok {
				var ref, avg float64
				_ = s.pool.QueryRow(t.Context(), `SELECT avgdl_ref, (SELECT sum(total_len)::float8 / greatest(sum(n_docs), 1) FROM stats_shards) FROM corpus_stats`).Scan(&ref, &avg)
				t.Errorf("does not hold (reference length %.3f, average %.3f)", ref, avg)
			}
		})
	}
	// The scores are exhaustive BM25 over the items stored, with the
	// reference length the impacts use: df and the corpus size summed from
	// the shards are those of the items.
	docs := map[string][]string{}
	if err := s.Each(t.Context(), func(it *h4r.Item) error { docs[it.ID] = strings.Fields(it.Text); return nil }); err != nil {
		t.Fatal(err)
	}
	var ref float64
	if err := s.pool.QueryRow(t.Context(), `SELECT avgdl_ref FROM corpus_stats`).Scan(&ref); err != nil {
		t.Fatal(err)
	}
	for _, query := range []string{"common", "word1 word3", "word0 common"} {
		t.Run("scores/"+query, func(t *testing.T) {
			hits, err := s.FullText().Generate(t.Context(), h4r.CandidateQuery{Text: query})
			if err != nil {
				t.Fatal(err)
			}
			if len(hits) == 0 {
				t.Fatal("no hits")
			}
			for _, h := range hits {
				want := 0.0
				for _, q := range strings.Fields(query) {
					df, tf := 0, 0
					for id, words := range docs {
						n := 0
						for _, w := range words {
							if w == q {
								n++
							}
						}
						if n > 0 {
							df++
						}
						if id == h.Item.ID {
							tf = n
						}
					}
					if tf > 0 {
						want += idf(int64(len(docs)), int64(df)) * float64(impact(tf, len(docs[h.Item.ID]), ref))
					}
				}
				if math.Abs(h.Score-want) > 1e-5 {
					t.Errorf("%s scores %.6f, want BM25 %.6f", h.Item.ID, h.Score, want)
				}
			}
		})
	}
}

// Replicas share one database: each batches its own access counts, and
// the counts add up.
func TestAccessCountsFromTwoReplicas(t *testing.T) {
	dsn := newSchema(t)
	a, b := openAt(t, dsn), openAt(t, dsn)
	if _, err := a.Upsert(t.Context(), []h4r.Item{{ID: "x", Text: "shared"}}); err != nil {
		t.Fatal(err)
	}
	a.RecordAccess([]string{"x", "x"})
	b.RecordAccess([]string{"x"})
	for _, s := range []*Store{a, b} {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	it, err := openAt(t, dsn).Get(t.Context(), "x")
	if err != nil {
		t.Fatal(err)
	}
	if it.Metadata.AccessCount != 3 {
		t.Errorf("accessCount = %d, want 3", it.Metadata.AccessCount)
	}
}

func TestNULIsRejectedWithItsField(t *testing.T) {
	s := newStore(t)
	tests := []struct {
		name  string
		item  h4r.Item
		field string
	}{
		{"text", h4r.Item{ID: "a", Text: "a\x00b"}, "items[0].text"},
		{"kind", h4r.Item{ID: "a", Kind: "k\x00", Text: "a"}, "items[0].kind"},
		{"tag", h4r.Item{ID: "a", Text: "a", Metadata: h4r.Metadata{Tags: []string{"ok", "b\x00d"}}}, "items[0].metadata.tags[1]"},
		{"link target", h4r.Item{ID: "a", Text: "a", Links: []h4r.Link{{Type: "fixes", Target: "\x00"}}}, "items[0].links[0].target"},
		{"content", h4r.Item{ID: "a", Text: "a", Content: map[string]any{"k": "v\x00"}}, "items[0].content.k"},
		{"metadata", h4r.Item{ID: "a", Text: "a", Metadata: h4r.Metadata{Extra: map[string]any{"k": "\x00"}}}, "items[0].metadata.k"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Upsert(t.Context(), []h4r.Item{tt.item})
			var e *h4r.Error
			if !errors.As(err, &e) || e.Code != h4r.EINVALID || e.Field != tt.field {
				t.Fatalf("Upsert: %v, want invalid_argument for %s", err, tt.field)
			}
		})
	}
	if n, err := s.Count(t.Context()); err != nil || n != 0 {
		t.Errorf("Count = %d, %v; want 0", n, err)
	}
}

func hitIDs(hits []h4r.Hit) []string {
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.Item.ID
	}
	return ids
}

// With filters the cut is applied before filtering, for speed; when that
// leaves too few hits and a term was cut, the search runs again over the
// items that pass, so a filter never hides its items behind others'.
func TestFilteredSearchBelowTheCut(t *testing.T) {
	s := newStore(t, WithTermCut(2))
	var items []h4r.Item
	for i := range 6 {
		kind := "note"
		if i >= 4 { // the longest items: their impacts are below the cut
			kind = "fix"
		}
		items = append(items, h4r.Item{ID: fmt.Sprintf("len-%d", i), Kind: kind, Text: "needle" + strings.Repeat(" hay", i)})
	}
	if _, err := s.Upsert(t.Context(), items); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		filters h4r.Filters
		limit   int
		want    []string
	}{
		{"filter passing the best", h4r.Filters{Kinds: []string{"note"}}, 2, []string{"len-0", "len-1"}},
		{"filter passing only items below the cut", h4r.Filters{Kinds: []string{"fix"}}, 0, []string{"len-4", "len-5"}},
		{"filter passing nothing", h4r.Filters{Kinds: []string{"nope"}}, 0, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hits, err := s.FullText().Generate(t.Context(), h4r.CandidateQuery{Text: "needle", Filters: tt.filters, Limit: tt.limit})
			if err != nil {
				t.Fatal(err)
			}
			if got := hitIDs(hits); !slices.Equal(got, tt.want) {
				t.Errorf("hits %v, want %v", got, tt.want)
			}
		})
	}
}

// The store's connections run without JIT unless the URL asks for it: a
// JIT compile cost seconds on millisecond queries whose cost was
// misestimated (connect).
func TestConnectTurnsJITOffUnlessTheURLSetsIt(t *testing.T) {
	dsn := newSchema(t)
	tests := []struct {
		name string
		dsn  string
		want string
	}{
		{"default", dsn, "off"},
		{"url sets jit on", dsn + "&jit=on", "on"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pool, err := connect(t.Context(), tt.dsn, 2)
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			var jit string
			if err := pool.QueryRow(t.Context(), `SHOW jit`).Scan(&jit); err != nil {
				t.Fatal(err)
			}
			if jit != tt.want {
				t.Errorf("jit = %q, want %q", jit, tt.want)
			}
		})
	}
}
