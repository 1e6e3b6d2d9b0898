package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/analysis"
	"github.com/h4r/h4r/tokens"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/h4r/h4r/index/ann"
	"github.com/h4r/h4r/index/bm25"
	"github.com/h4r/h4r/store/internal/sqlkit"
)

// Connection settings.
const (
	busyTimeout       = 5 * time.Second // how long a writer waits for another process's lock
	readConnections   = 4
	defaultFlushEvery = time.Second
	flushTimeout      = 30 * time.Second
	// defaultWriteTimeout bounds one write: waiting for the writer and its
	// statements.
	defaultWriteTimeout = 5 * time.Second
)

// timeLayout stores times as UTC text of fixed width, so that SQL compares
// them correctly as strings (RFC 3339 with a trimmed fraction does not).
const timeLayout = "2006-01-02T15:04:05.000000000Z"

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

func parseTime(s string) (time.Time, error) { return time.Parse(timeLayout, s) }

// Store keeps memory items in one SQLite file. It is safe for concurrent
// use. Create it with Open and release it with Close.
type Store struct {
	path    string         // the file, absolute (Backup opens a connection of its own)
	writer  *sql.DB        // one connection: SQLite has one writer
	readers *sql.DB        // a pool of query_only connections
	reads   readStatements // prepared on readers (prepared.go)
	counter *tokens.Counter
	now     func() time.Time
	log     *slog.Logger
	access  *sqlkit.AccessTracker
	vectors vectorIndex // item vectors for exact search (vectors.go)
	adj     adjacency   // the link graph, for hops (adjacency.go)
	text    textIndex   // the BM25 index of items.text, for full text (textindex.go)
	items   itemCache   // decoded items, for the generators' hits (itemcache.go)
	// txCounters holds each open read transaction's counters (readTx,
	// readCounter), by *sql.Tx.
	txCounters sync.Map
	// analyzer turns query text into full-text terms (stop words, counts).
	analyzer *analysis.Analyzer
	// writeTimeout bounds each write (writeTx, upsertTx, deleteTx).
	writeTimeout time.Duration
	// textFilterRounds is how many growing prefixes of the ranking a
	// filtered full-text search checks before it reads the passing rows
	// (fulltext.go); tests set 0 to take that path at once.
	textFilterRounds int
	// swept is what the last complete search for items without a vector
	// saw when it began (EmbedMissingVectors); sweeps counts the searches
	// made, for tests.
	sweptMu sync.Mutex
	swept   sweepMark
	sweeps  atomic.Int64

	closeOnce sync.Once
	closeErr  error
}

// Option configures Open.
type Option func(*options)

type options struct {
	counter    *tokens.Counter
	now        func() time.Time
	flushEvery time.Duration
	log        *slog.Logger
	embedder   h4r.Embedder
	analyzer   *analysis.Analyzer
	writeAfter time.Duration
	// itemCacheBytes bounds the decoded-item cache; nil: the default.
	itemCacheBytes *int64
	annAbove       int
	sync           string // SyncFull or SyncNormal
}

// WithTokenCounter sets the counter that measures items' tokens at ingest.
// Without it Open loads cl100k_base; pass a shared counter to avoid loading
// one per store.
func WithTokenCounter(c *tokens.Counter) Option { return func(o *options) { o.counter = c } }

// WithClock sets the clock that stamps createdAt defaults, updatedAt and
// lastAccessedAt. The default is time.Now.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithAccessFlushInterval sets how often recorded accesses are written to
// the file (default 1s). Accesses still pending are written by Close.
func WithAccessFlushInterval(d time.Duration) Option {
	return func(o *options) { o.flushEvery = d }
}

// WithStopWords sets the words full-text queries leave out (default
// analysis.English(); nil or empty: none). The index keeps every word, so
// this can change between runs.
func WithStopWords(words []string) Option {
	return func(o *options) { o.analyzer = analysis.New(words) }
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithWriteTimeout bounds each write (Upsert, Delete, the access counts):
// waiting for the one writer, behind the writes before it, and its
// statements (default 5s). A write past it is rolled back and fails with an
// unavailable *h4r.Error, instead of queueing behind a burst of writes for
// as long as the burst lasts. Another process holding the file's write
// lock is waited for at most this long too.
func WithWriteTimeout(d time.Duration) Option { return func(o *options) { o.writeAfter = d } }

// Sync modes of WithSync: SQLite's PRAGMA synchronous in WAL mode.
const (
	// SyncFull syncs the write-ahead log at every commit: a write that
	// was answered survives a process crash and a power loss or OS crash.
	SyncFull = "full"
	// SyncNormal syncs the log only at checkpoints: a write that was
	// answered survives a process crash, but a power loss or OS crash may
	// roll back the last commits (never corrupting the file).
	SyncNormal = "normal"
)

// WithSync sets how durable a commit is (default SyncFull).
func WithSync(mode string) Option { return func(o *options) { o.sync = mode } }

// WithVectorANNThreshold sets the number of vectors from which vector
// search scans only the lists of an inverted file nearest the query
// instead of every vector (default ann.DefaultThreshold; 0: always exact).
func WithVectorANNThreshold(n int) Option { return func(o *options) { o.annAbove = n } }

// Open opens the store file at path, creating it and its parent directory
// when missing, and applies the schema migrations it has not seen yet.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	o := options{now: time.Now, flushEvery: defaultFlushEvery, log: slog.Default(), writeAfter: defaultWriteTimeout, annAbove: ann.DefaultThreshold, sync: SyncFull}
	for _, opt := range opts {
		opt(&o)
	}
	switch {
	case strings.TrimSpace(path) == "":
		return nil, h4r.Errorf(h4r.EINVALID, "path", "store path is required")
	case path == ":memory:" || strings.HasPrefix(path, "file:"):
		// Each connection would get its own in-memory database, and a URI
		// would bypass the settings below.
		return nil, h4r.Errorf(h4r.EINVALID, "path", "store path must be a file path, got %q", path)
	case o.flushEvery <= 0:
		return nil, h4r.Errorf(h4r.EINVALID, "accessFlushInterval", "access flush interval must be positive, got %v", o.flushEvery)
	case o.now == nil:
		return nil, h4r.Errorf(h4r.EINVALID, "clock", "clock must not be nil")
	case o.log == nil:
		return nil, h4r.Errorf(h4r.EINVALID, "logger", "logger must not be nil")
	case o.writeAfter <= 0:
		return nil, h4r.Errorf(h4r.EINVALID, "writeTimeout", "write timeout must be positive, got %v", o.writeAfter)
	case o.annAbove < 0:
		return nil, h4r.Errorf(h4r.EINVALID, "vectorANNThreshold", "vector ANN threshold must not be negative, got %d", o.annAbove)
	case o.sync != SyncFull && o.sync != SyncNormal:
		return nil, h4r.Errorf(h4r.EINVALID, "sync", "sync must be %s or %s, got %q", SyncFull, SyncNormal, o.sync)
	case o.itemCacheBytes != nil && *o.itemCacheBytes < 0:
		return nil, h4r.Errorf(h4r.EINVALID, "itemCacheBytes", "item cache size must not be negative, got %d", *o.itemCacheBytes)
	}
	cacheBytes := int64(DefaultItemCacheBytes)
	if o.itemCacheBytes != nil {
		cacheBytes = *o.itemCacheBytes
	}
	if o.counter == nil {
		c, err := tokens.New(tokens.CL100K)
		if err != nil {
			return nil, fmt.Errorf("opening store %s: %w", path, err)
		}
		o.counter = c
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("opening store %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o750); err != nil {
		return nil, fmt.Errorf("creating the store's directory: %w", err)
	}

	writer, err := sql.Open("sqlite", dsn(abs, false, min(busyTimeout, o.writeAfter), o.sync))
	if err != nil {
		return nil, fmt.Errorf("opening store %s: %w", abs, err)
	}
	writer.SetMaxOpenConns(1)
	if err := writer.PingContext(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("opening store %s: %w", abs, err), writer.Close())
	}
	migrations, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return nil, errors.Join(fmt.Errorf("reading embedded migrations: %w", err), writer.Close())
	}
	if err := migrate(ctx, writer, migrations, o.now, o.log); err != nil {
		return nil, errors.Join(fmt.Errorf("migrating store %s: %w", abs, err), writer.Close())
	}
	readers, err := sql.Open("sqlite", dsn(abs, true, busyTimeout, ""))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("opening store %s for reading: %w", abs, err), writer.Close())
	}
	readers.SetMaxOpenConns(readConnections)
	readers.SetMaxIdleConns(readConnections)
	reads, err := prepareReads(ctx, readers)
	if err != nil {
		return nil, errors.Join(err, readers.Close(), writer.Close())
	}

	if o.analyzer == nil {
		o.analyzer = analysis.Default()
	}
	s := &Store{path: abs, writer: writer, readers: readers, reads: reads, counter: o.counter, now: o.now, log: o.log, analyzer: o.analyzer, writeTimeout: o.writeAfter, textFilterRounds: defaultTextFilterRounds}
	s.vectors.embedder = o.embedder
	s.items = newItemCache(cacheBytes)
	s.text.stems = bm25.NewStems(writeStems)
	s.vectors.ix = ann.New(ann.WithThreshold(o.annAbove), ann.WithLock(&s.vectors.mu)) // re-clusters in the background
	s.access = sqlkit.StartAccessTracker(s.flushAccess, o.flushEvery, flushTimeout, o.now, o.log)
	if n, err := s.recountTokens(ctx); err != nil {
		return nil, errors.Join(err, s.Close())
	} else if n > 0 {
		o.log.InfoContext(ctx, "recounted the tokens of items counted with another encoding", "items", n, "encoding", o.counter.Encoding())
	}
	return s, nil
}

// dsn builds the driver's connection string. Every connection gets the
// busy timeout (how long it waits for another process's lock; the writer's
// is at most the write timeout) and foreign keys; the writer sets WAL (a
// property of the file) and begins transactions IMMEDIATE, so that it takes
// the write lock up front instead of failing to upgrade a read lock later,
// and syncs commits as sync says (WithSync).
func dsn(path string, readOnly bool, busy time.Duration, sync string) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", max(busy.Milliseconds(), 1)))
	q.Add("_pragma", "foreign_keys(1)")
	if readOnly {
		q.Add("_pragma", "query_only(1)")
	} else {
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous("+strings.ToUpper(sync)+")")
		q.Set("_txlock", "immediate")
	}
	u := url.URL{Scheme: "file", Path: path, RawQuery: q.Encode()}
	return u.String()
}

// Close writes the accesses still pending, then closes the file. Calling it
// again does nothing and returns the first call's error.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closeErr = errors.Join(s.access.Stop(), s.reads.close(), s.readers.Close(), s.writer.Close())
	})
	return s.closeErr
}

// Ping checks that the file can be read and written.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.readers.PingContext(ctx); err != nil {
		return fmt.Errorf("pinging store readers: %w", err)
	}
	if err := s.writer.PingContext(ctx); err != nil {
		return fmt.Errorf("pinging store writer: %w", err)
	}
	return nil
}

// FullText returns the full-text candidate generator.
func (s *Store) FullText() h4r.Generator { return fullText{s} }

// Graph returns the causal-hop candidate generator.
func (s *Store) Graph() h4r.Generator { return graph{s} }
