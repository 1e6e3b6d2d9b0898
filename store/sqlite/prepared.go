package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// counter names one of the single-row generation counters every read of
// a generator starts with.
type counter int

const (
	vectorCounter counter = iota
	itemCounter
	textCounter
	graphCounter
	counters
)

// counterSQL and counterWhat are each counter's query and what an error
// reading it names.
var (
	counterSQL = [counters]string{
		vectorCounter: `SELECT generation FROM vector_generation WHERE id = 1`,
		itemCounter:   `SELECT generation FROM item_generation WHERE id = 1`,
		textCounter:   `SELECT generation FROM text_generation WHERE id = 1`,
		graphCounter:  `SELECT generation FROM graph_generation WHERE id = 1`,
	}
	counterWhat = [counters]string{
		vectorCounter: "the vector generation",
		itemCounter:   "the item generation",
		textCounter:   "the full-text generation",
		graphCounter:  "the graph generation",
	}
)

// readStatements are the counters' queries prepared on the readers' pool.
// The driver parses a query string again on every call; a prepared
// statement is parsed once per connection (database/sql prepares it on a
// connection the first time a transaction there uses it, and keeps it), and
// a pack reads two counters in each of its generators' reads.
// The last is allCountersSQL.
type readStatements [counters + 1]*sql.Stmt

// allCountersSQL reads every counter in one statement, in counter order:
// a read transaction sees one snapshot, so the counters it reads later are
// those it would read first, and a pack's generators read two or three
// each.
var allCountersSQL = func() string {
	cols := make([]string, counters)
	for c, q := range counterSQL {
		cols[c] = "(" + q + ")"
	}
	return "SELECT " + strings.Join(cols, ", ")
}()

func prepareReads(ctx context.Context, readers *sql.DB) (readStatements, error) {
	var st readStatements
	for c, q := range append(counterSQL[:], allCountersSQL) {
		p, err := readers.PrepareContext(ctx, q)
		if err != nil {
			what := "every generation"
			if c < int(counters) {
				what = counterWhat[c]
			}
			return st, errors.Join(fmt.Errorf("preparing the read of %s: %w", what, err), st.close())
		}
		st[c] = p
	}
	return st, nil
}

func (st *readStatements) close() error {
	var err error
	for _, p := range st {
		if p != nil {
			err = errors.Join(err, p.Close())
		}
	}
	return err
}

// txCounters are the counters of one read transaction (readTx), read
// together at the first that is asked for.
type txCounters struct {
	mu    sync.Mutex
	read  bool
	gen   [counters]int64
	valid [counters]bool // false: the row is missing, read alone to say so
}

// readCounterSQL reads counter c in tx, any transaction, parsing its query.
func readCounterSQL(ctx context.Context, tx *sql.Tx, c counter) (int64, error) {
	var g int64
	if err := tx.QueryRowContext(ctx, counterSQL[c]).Scan(&g); err != nil {
		return 0, fmt.Errorf("reading %s: %w", counterWhat[c], err)
	}
	return g, nil
}

// readCounter reads counter c in tx, a read transaction of s.readers
// (readTx), through its prepared statement (a Store not made by Open has
// none, and parses the query).
func (s *Store) readCounter(ctx context.Context, tx *sql.Tx, c counter) (int64, error) {
	if s.reads[c] == nil {
		return readCounterSQL(ctx, tx, c)
	}
	if v, ok := s.txCounters.Load(tx); ok {
		if g, ok := v.(*txCounters).get(ctx, tx, s.reads[counters], c); ok {
			return g, nil
		}
	}
	var g int64
	if err := tx.StmtContext(ctx, s.reads[c]).QueryRowContext(ctx).Scan(&g); err != nil {
		return 0, fmt.Errorf("reading %s: %w", counterWhat[c], err)
	}
	return g, nil
}

// get returns counter c as tx sees it, reading every counter with all
// the first time; false when they could not be read or c's row is missing
// (the caller reads it alone, for its error).
func (tc *txCounters) get(ctx context.Context, tx *sql.Tx, all *sql.Stmt, c counter) (int64, bool) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if !tc.read {
		tc.read = true
		var g [counters]sql.NullInt64
		dst := make([]any, counters)
		for i := range g {
			dst[i] = &g[i]
		}
		if err := tx.StmtContext(ctx, all).QueryRowContext(ctx).Scan(dst...); err != nil {
			return 0, false
		}
		for i := range g {
			tc.gen[i], tc.valid[i] = g[i].Int64, g[i].Valid
		}
	}
	return tc.gen[c], tc.valid[c]
}
