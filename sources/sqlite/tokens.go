package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/h4r/h4r"
)

// recountBatch is how many rows one recount transaction rewrites: small
// enough not to hold the write lock for long while the store is opening.
const recountBatch = 500

// recountTokens recounts the tokens of every item counted with another
// encoding than the store's counter (H4R_TOKEN_ENCODING changed, or rows
// written before encodings were recorded), so that budgets never measure
// an item with counts of another encoding. It returns how many items it
// recounted. Open runs it; it is idempotent.
func (s *Store) recountTokens(ctx context.Context) (int, error) {
	encoding := s.counter.Encoding()
	done := 0
	for after := int64(0); ; {
		type row struct {
			seq     int64
			it      h4r.Item
			content sql.NullString
		}
		var rows []row
		err := s.writeTx(ctx, func(tx *sql.Tx) error {
			rs, err := tx.QueryContext(ctx, `SELECT seq, id, kind, text, content FROM items
				WHERE token_encoding <> ? AND seq > ? ORDER BY seq LIMIT ?`, encoding, after, recountBatch)
			if err != nil {
				return err
			}
			defer rs.Close()
			for rs.Next() {
				var r row
				if err := rs.Scan(&r.seq, &r.it.ID, &r.it.Kind, &r.it.Text, &r.content); err != nil {
					return err
				}
				rows = append(rows, r)
			}
			if err := rs.Err(); err != nil {
				return err
			}
			for _, r := range rows {
				if r.content.Valid {
					if err := json.Unmarshal([]byte(r.content.String), &r.it.Content); err != nil {
						return fmt.Errorf("reading the content of item %q: %w", r.it.ID, err)
					}
				}
				delivered, err := r.it.Delivered().Encode()
				if err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, `UPDATE items SET tokens = ?, token_encoding = ? WHERE seq = ?`,
					s.counter.Count(string(delivered)), encoding, r.seq); err != nil {
					return fmt.Errorf("writing the token count of item %q: %w", r.it.ID, err)
				}
			}
			return nil
		})
		if err != nil {
			return done, fmt.Errorf("recounting tokens with %s: %w", encoding, err)
		}
		done += len(rows)
		if len(rows) < recountBatch {
			return done, nil
		}
		after = rows[len(rows)-1].seq
	}
}
