package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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
type readStatements [counters]*sql.Stmt

func prepareReads(ctx context.Context, readers *sql.DB) (readStatements, error) {
	var st readStatements
	for c, q := range counterSQL {
		p, err := readers.PrepareContext(ctx, q)
		if err != nil {
			return st, errors.Join(fmt.Errorf("preparing the read of %s: %w", counterWhat[c], err), st.close())
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
	var g int64
	if err := tx.StmtContext(ctx, s.reads[c]).QueryRowContext(ctx).Scan(&g); err != nil {
		return 0, fmt.Errorf("reading %s: %w", counterWhat[c], err)
	}
	return g, nil
}
