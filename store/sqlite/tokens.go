package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/h4r/h4r/store/internal/sqlkit"
)

// recountTokens recounts the tokens of every item counted with another
// encoding than the store's counter (H4R_TOKEN_ENCODING changed, or rows
// written before encodings were recorded), so that budgets never measure
// an item with counts of another encoding. It returns how many items it
// recounted. Open runs it; it is idempotent.
//
// Whether any item needs it is read first, without the write lock: that
// read scans the whole table, and a store opened while another process
// writes (a server starting as the one before it finishes, an ingest
// running) would otherwise wait for that process's lock and fail to open,
// to find nothing to recount.
func (s *Store) recountTokens(ctx context.Context) (int, error) {
	encoding := s.counter.Encoding()
	var stale bool
	if err := s.readers.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM items WHERE token_encoding <> ?)`, encoding).Scan(&stale); err != nil {
		return 0, fmt.Errorf("looking for items counted with another encoding than %s: %w", encoding, err)
	}
	if !stale {
		return 0, nil
	}
	done := 0
	for after, n := int64(0), sqlkit.RecountBatch; n == sqlkit.RecountBatch; {
		n = 0
		err := s.writeTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
			type row struct {
				seq            int64
				id, kind, text string
				content        sql.NullString
			}
			rs, err := tx.QueryContext(ctx, `SELECT seq, id, kind, text, content FROM items
				WHERE token_encoding <> ? AND seq > ? ORDER BY seq LIMIT ?`, encoding, after, sqlkit.RecountBatch)
			if err != nil {
				return err
			}
			var rows []row
			for rs.Next() {
				var r row
				if err := rs.Scan(&r.seq, &r.id, &r.kind, &r.text, &r.content); err != nil {
					rs.Close()
					return err
				}
				rows = append(rows, r)
			}
			if err := errors.Join(rs.Err(), rs.Close()); err != nil {
				return err
			}
			for _, r := range rows {
				var content []byte
				if r.content.Valid {
					content = []byte(r.content.String)
				}
				tokens, err := sqlkit.RecountTokens(s.counter.Count, r.id, r.kind, r.text, content)
				if err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, `UPDATE items SET tokens = ?, token_encoding = ? WHERE seq = ?`, tokens, encoding, r.seq); err != nil {
					return fmt.Errorf("writing the token count of item %q: %w", r.id, err)
				}
				after = r.seq
			}
			n = len(rows)
			return nil
		})
		if err != nil {
			return done, fmt.Errorf("recounting tokens with %s: %w", encoding, err)
		}
		done += n
	}
	return done, nil
}
