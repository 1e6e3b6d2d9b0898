package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/analysis"
	"github.com/h4r/h4r/tokens"

	"github.com/h4r/h4r/index/ann"
	"github.com/h4r/h4r/index/itemcache"
	"github.com/h4r/h4r/store/internal/sqlkit"
)

// Defaults.
const (
	defaultFlushEvery  = time.Second
	flushTimeout       = 30 * time.Second
	defaultTermCut     = 1000
	defaultConnTimeout = 5 * time.Second
	// Pools. Writes run side by side (each holds a statistics shard of its
	// own), so a few write connections let a few ingests proceed at once
	// on a small machine; reads have connections of their own, so writers
	// waiting for locks never hold the connections reads need.
	defaultMaxReadConns  = 8
	defaultMaxWriteConns = 4
	// defaultWriteTimeout bounds one write: waiting for a connection and
	// the lock, and its statements.
	defaultWriteTimeout = 5 * time.Second
	// cancelGrace is how long a cancelled query may take to stop after
	// Postgres was asked to cancel it before the connection is cut.
	cancelGrace = 2 * time.Second
)

// Store keeps memory items in PostgreSQL. It is safe for concurrent use,
// and several stores (in several processes) may share one database. Create
// it with Open and release it with Close.
type Store struct {
	pool    *pgxpool.Pool // reads
	writes  *pgxpool.Pool // writes: a pool of their own, see defaultMaxWriteConns
	counter *tokens.Counter
	now     func() time.Time
	log     *slog.Logger
	access  *sqlkit.AccessTracker
	termCut int
	retry   retryPolicy
	// analyzer turns query text into full-text terms (stop words, counts).
	analyzer *analysis.Analyzer
	// writeTimeout bounds each write (writeTx).
	writeTimeout time.Duration

	analyzing atomic.Bool // an ANALYZE of this process is running (planner.go)
	// vacuums are the VACUUMs planner.go runs in the background after an
	// ANALYZE; Close stops them (stopVacuums) and waits.
	vacuums     sync.WaitGroup
	vacuumCtx   context.Context
	stopVacuums context.CancelFunc
	vacuumed    atomic.Int64 // VACUUMs done (tests)
	vacuuming   atomic.Bool  // a VACUUM of this process is running
	// vacuumedDocs is the corpus size when this process last started one.
	vacuumedDocs atomic.Int64
	// vectors is the in-process vector index (vectors.go), polled every
	// vectorPoll for other replicas' writes.
	vectors    vectorState
	vectorPoll time.Duration
	annAbove   int // the vector index's ANN threshold (WithVectorANNThreshold)
	// items are decoded items the generators read their hits through
	// (itemcache.go).
	items *itemcache.Cache
	// graph is the in-memory link graph for hops (memgraph.go), polled
	// every graphPoll for other replicas' writes.
	graph     graphMemory
	graphPoll time.Duration
	hits      hitCache // decoded graph hits of the walk in memory
	// lexemes and termIDs spare writes the analysis and the term lookups
	// of words seen before (lexicon.go).
	lexemes   *lexemeCache
	termIDs   *termIDCache
	closeOnce sync.Once
	closeErr  error
}

// Option configures Open and Migrate.
type Option func(*options)

type options struct {
	counter       *tokens.Counter
	now           func() time.Time
	flushEvery    time.Duration
	log           *slog.Logger
	termCut       int
	maxRead       int32
	maxWrite      int32
	writeAfter    time.Duration
	retry         retryPolicy
	analyzer      *analysis.Analyzer
	vectorPoll    time.Duration
	annAbove      int
	graphPoll     time.Duration
	hitCacheBytes int64
	// itemCacheBytes is the item cache's budget; nil: the default.
	itemCacheBytes *int64
}

// WithVectorANNThreshold sets the number of vectors from which vector
// search scans only the lists of an inverted file nearest the query
// instead of every vector (default ann.DefaultThreshold; 0: always exact).
func WithVectorANNThreshold(n int) Option { return func(o *options) { o.annAbove = n } }

// WithTokenCounter sets the counter that measures items' tokens at ingest.
// Without it Open loads cl100k_base.
func WithTokenCounter(c *tokens.Counter) Option { return func(o *options) { o.counter = c } }

// WithClock sets the clock that stamps createdAt defaults, updatedAt and
// lastAccessedAt. The default is time.Now.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithAccessFlushInterval sets how often recorded accesses are written
// (default 1s). Accesses still pending are written by Close.
func WithAccessFlushInterval(d time.Duration) Option {
	return func(o *options) { o.flushEvery = d }
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithStopWords sets the words full-text queries leave out (default
// analysis.English(), the same list as the english text search
// configuration). The index was built with that configuration, which drops
// its own stop words from documents and queries alike, so a shorter list
// here (or none) cannot bring those words back; a longer one drops more.
func WithStopWords(words []string) Option {
	return func(o *options) { o.analyzer = analysis.New(words) }
}

// WithTermCut sets how many of a query term's postings, best impact first,
// a full-text query reads (default 1000). Terms held by fewer items are
// scored exactly; a larger cut trades speed on common words for recall.
func WithTermCut(n int) Option { return func(o *options) { o.termCut = n } }

// WithMaxReadConns caps the pool of connections reads use (default 8).
func WithMaxReadConns(n int) Option { return func(o *options) { o.maxRead = int32(n) } }

// WithMaxWriteConns caps the pool of connections writes use (default 4):
// how many writes of this store run at once. Writes beyond it wait for a
// connection, within their deadline (WithWriteTimeout).
func WithMaxWriteConns(n int) Option { return func(o *options) { o.maxWrite = int32(n) } }

// WithWriteTimeout bounds each write (Upsert, Delete, the access counts):
// waiting for a write connection and for the lock, and its statements
// (default 5s). A write past it is rolled back and fails with an
// unavailable *h4r.Error, instead of queueing behind a burst of writes for
// as long as the burst lasts.
func WithWriteTimeout(d time.Duration) Option { return func(o *options) { o.writeAfter = d } }

// WithReadRetries sets how many times a read that failed for a transient
// reason (a lost connection, a server restarting, a serialization failure)
// is tried again, and the first backoff, doubled each time (default 3 and
// 50ms).
func WithReadRetries(attempts int, backoff time.Duration) Option {
	return func(o *options) { o.retry = retryPolicy{attempts: attempts, backoff: backoff} }
}

func buildOptions(opts []Option) (options, error) {
	o := options{now: time.Now, flushEvery: defaultFlushEvery, log: slog.Default(), termCut: defaultTermCut,
		maxRead: defaultMaxReadConns, maxWrite: defaultMaxWriteConns, writeAfter: defaultWriteTimeout,
		retry: retryPolicy{attempts: 3, backoff: 50 * time.Millisecond}, vectorPoll: defaultVectorPoll, annAbove: ann.DefaultThreshold,
		graphPoll: defaultGraphPoll, hitCacheBytes: defaultHitCacheBytes}
	for _, opt := range opts {
		opt(&o)
	}
	switch {
	case o.flushEvery <= 0:
		return o, h4r.Errorf(h4r.EINVALID, "accessFlushInterval", "access flush interval must be positive, got %v", o.flushEvery)
	case o.now == nil:
		return o, h4r.Errorf(h4r.EINVALID, "clock", "clock must not be nil")
	case o.log == nil:
		return o, h4r.Errorf(h4r.EINVALID, "logger", "logger must not be nil")
	case o.termCut <= 0:
		return o, h4r.Errorf(h4r.EINVALID, "termCut", "term cut must be positive, got %d", o.termCut)
	case o.maxRead < 1:
		return o, h4r.Errorf(h4r.EINVALID, "maxReadConns", "max read connections must be >= 1, got %d", o.maxRead)
	case o.maxWrite < 1:
		return o, h4r.Errorf(h4r.EINVALID, "maxWriteConns", "max write connections must be >= 1, got %d", o.maxWrite)
	case o.writeAfter <= 0:
		return o, h4r.Errorf(h4r.EINVALID, "writeTimeout", "write timeout must be positive, got %v", o.writeAfter)
	case o.vectorPoll <= 0:
		return o, h4r.Errorf(h4r.EINVALID, "vectorPollInterval", "vector poll interval must be positive, got %v", o.vectorPoll)
	case o.itemCacheBytes != nil && *o.itemCacheBytes < 0:
		return o, h4r.Errorf(h4r.EINVALID, "itemCacheBytes", "item cache size must not be negative, got %d", *o.itemCacheBytes)
	case o.hitCacheBytes < 0:
		return o, h4r.Errorf(h4r.EINVALID, "hitCacheBytes", "hit cache size must not be negative, got %d", o.hitCacheBytes)
	case o.graphPoll <= 0:
		return o, h4r.Errorf(h4r.EINVALID, "graphPollInterval", "graph poll interval must be positive, got %v", o.graphPoll)
	case o.annAbove < 0:
		return o, h4r.Errorf(h4r.EINVALID, "vectorANNThreshold", "vector ANN threshold must not be negative, got %d", o.annAbove)
	case o.retry.attempts < 0 || o.retry.backoff < 0:
		return o, h4r.Errorf(h4r.EINVALID, "readRetries", "read retries and backoff must be >= 0")
	}
	if o.analyzer == nil {
		o.analyzer = analysis.Default()
	}
	return o, nil
}

// Open connects to the database at databaseURL (a postgres:// URL or a
// key=value DSN; search_path in it selects the schema), checks that it can
// be reached, and applies the schema migrations it has not seen yet. The
// errors say which: the server cannot be reached, or the role lacks the
// rights to create or read the tables.
func Open(ctx context.Context, databaseURL string, opts ...Option) (*Store, error) {
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	if o.counter == nil {
		c, err := tokens.New(tokens.CL100K)
		if err != nil {
			return nil, fmt.Errorf("opening the Postgres store: %w", err)
		}
		o.counter = c
	}
	writes, err := connect(ctx, databaseURL, o.maxWrite)
	if err != nil {
		return nil, err
	}
	if err := migrate(ctx, writes, o.log); err != nil {
		writes.Close()
		return nil, fmt.Errorf("migrating the Postgres schema: %w", explain(err))
	}
	reads, err := connect(ctx, databaseURL, o.maxRead)
	if err != nil {
		writes.Close()
		return nil, err
	}
	s := &Store{pool: reads, writes: writes, counter: o.counter, now: o.now, log: o.log, termCut: o.termCut,
		retry: o.retry, writeTimeout: o.writeAfter, analyzer: o.analyzer, vectorPoll: o.vectorPoll, annAbove: o.annAbove,
		graphPoll: o.graphPoll}
	s.graph.nudge = make(chan struct{}, 1)
	s.hits = newHitCache(o.hitCacheBytes)
	s.lexemes, s.termIDs = newLexemeCache(), newTermIDCache()
	s.vectors.ix = ann.New(ann.WithThreshold(o.annAbove), ann.WithLock(&s.vectors.mu)) // re-clusters in the background
	s.vacuumCtx, s.stopVacuums = context.WithCancel(context.WithoutCancel(ctx))
	cacheBytes := int64(DefaultItemCacheBytes)
	if o.itemCacheBytes != nil {
		cacheBytes = *o.itemCacheBytes
	}
	s.items = itemcache.New(cacheBytes)
	if err := s.Ping(ctx); err != nil {
		reads.Close()
		writes.Close()
		return nil, err
	}
	s.access = sqlkit.StartAccessTracker(s.flushAccess, o.flushEvery, flushTimeout, o.now, o.log)
	if n, err := s.recountTokens(ctx); err != nil {
		return nil, errors.Join(err, s.Close())
	} else if n > 0 {
		o.log.InfoContext(ctx, "recounted the tokens of items counted with another encoding", "items", n, "encoding", o.counter.Encoding())
	}
	return s, nil
}

// Migrate applies the schema migrations to the database at databaseURL and
// returns the schema version before and after, for `h4r migrate`.
func Migrate(ctx context.Context, databaseURL string, opts ...Option) (from, to int, err error) {
	o, err := buildOptions(opts)
	if err != nil {
		return 0, 0, err
	}
	pool, err := connect(ctx, databaseURL, o.maxWrite)
	if err != nil {
		return 0, 0, err
	}
	defer pool.Close()
	from, err = schemaVersion(ctx, pool)
	if err != nil {
		return 0, 0, fmt.Errorf("reading the schema version: %w", explain(err))
	}
	if err := migrate(ctx, pool, o.log); err != nil {
		return from, 0, fmt.Errorf("migrating the Postgres schema: %w", explain(err))
	}
	to, err = schemaVersion(ctx, pool)
	if err != nil {
		return from, 0, fmt.Errorf("reading the schema version: %w", explain(err))
	}
	return from, to, nil
}

// connect builds a pool of at most maxConns connections and proves the
// server answers.
func connect(ctx context.Context, databaseURL string, maxConns int32) (*pgxpool.Pool, error) {
	if strings.TrimSpace(databaseURL) == "" {
		return nil, h4r.Errorf(h4r.EINVALID, "DATABASE_URL", "database URL is required")
	}
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		// The parse error may quote the URL, password included.
		return nil, h4r.Errorf(h4r.EINVALID, "DATABASE_URL", "not a valid Postgres URL or DSN")
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = defaultConnTimeout
	}
	// pgx's default on a cancelled context is to cut the socket, which
	// leaves the query running in Postgres until it ends. Ask the server to
	// cancel it instead, and cut the socket only if that does not work.
	cfg.ConnConfig.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: cancelGrace}
	}
	// H4R's queries take milliseconds. Postgres compiles a query with JIT
	// when its estimated cost passes jit_above_cost, and estimates drift
	// (an unanalysed one-row table is guessed at over a thousand rows): a
	// full-text query then spent many times its run time compiling. A URL that sets jit
	// keeps its choice.
	if _, set := cfg.ConnConfig.RuntimeParams["jit"]; !set {
		cfg.ConnConfig.RuntimeParams["jit"] = "off"
	}
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("configuring the Postgres pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("cannot reach Postgres at %s (database %q, user %q): %w",
			hostPort(cfg), cfg.ConnConfig.Database, cfg.ConnConfig.User, err)
	}
	return pool, nil
}

func hostPort(cfg *pgxpool.Config) string {
	return fmt.Sprintf("%s:%d", cfg.ConnConfig.Host, cfg.ConnConfig.Port)
}

// explain adds what to do to errors whose cause is the role's rights.
func explain(err error) error {
	var pg *pgconn.PgError
	if errors.As(err, &pg) && pg.Code == "42501" { // insufficient_privilege
		return fmt.Errorf("the database role lacks the rights H4R needs (create tables in its schema, then read and write them); grant them or run `h4r migrate` as the schema owner: %w", err)
	}
	return err
}

// ItemCacheStats returns what the store's item cache holds and how often
// reads found their items in it since the store opened: the figures its
// budget (WithItemCacheBytes) is sized by.
func (s *Store) ItemCacheStats() itemcache.Stats { return s.items.Stats() }

// Close writes the accesses still pending, then closes the pools. Calling
// it again does nothing and returns the first call's error.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.stopVacuums()
		s.vacuums.Wait()
		s.closeErr = s.access.Stop()
		s.pool.Close()
		s.writes.Close()
	})
	return s.closeErr
}

// Ping checks that the database answers and that the role can read the
// store's tables (readiness, /health/ready).
func (s *Store) Ping(ctx context.Context) error {
	err := s.read(ctx, func(ctx context.Context) error {
		var n int64
		return s.pool.QueryRow(ctx, `SELECT count(*) FROM stats_shards`).Scan(&n)
	})
	if err != nil {
		return fmt.Errorf("pinging Postgres: %w", explain(err))
	}
	return nil
}

// FullText returns the BM25 full-text candidate generator.
func (s *Store) FullText() h4r.Generator { return fullText{s} }

// Graph returns the causal-hop candidate generator.
func (s *Store) Graph() h4r.Generator { return graph{s: s} }
