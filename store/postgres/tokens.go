package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/h4r/h4r/store/internal/sqlkit"
)

// recountTokens recounts the tokens of every item counted with another
// encoding than the store's counter (H4R_TOKEN_ENCODING changed, or rows
// written before encodings were recorded), so that budgets never measure
// an item with counts of another encoding. It returns how many items it
// recounted. Open runs it; it is idempotent.
func (s *Store) recountTokens(ctx context.Context) (int, error) {
	encoding := s.counter.Encoding()
	done := 0
	for after := int64(0); ; {
		n := 0
		err := s.writeTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
			rows, err := tx.Query(ctx, `SELECT seq, id, kind, text, content FROM items
				WHERE token_encoding <> $1 AND seq > $2 ORDER BY seq LIMIT $3`, encoding, after, sqlkit.RecountBatch)
			if err != nil {
				return err
			}
			var (
				seqs   []int64
				counts []int32
			)
			for rows.Next() {
				var (
					seq            int64
					id, kind, text string
					content        []byte
				)
				if err := rows.Scan(&seq, &id, &kind, &text, &content); err != nil {
					rows.Close()
					return err
				}
				tokens, err := sqlkit.RecountTokens(s.counter.Count, id, kind, text, content)
				if err != nil {
					rows.Close()
					return err
				}
				seqs = append(seqs, seq)
				counts = append(counts, int32(tokens))
			}
			if err := rows.Err(); err != nil {
				return err
			}
			n = len(seqs)
			if n == 0 {
				return nil
			}
			after = seqs[n-1]
			_, err = tx.Exec(ctx, `UPDATE items i SET tokens = u.tokens, token_encoding = $3
				FROM unnest($1::bigint[], $2::int[]) AS u (seq, tokens) WHERE i.seq = u.seq`, seqs, counts, encoding)
			return err
		})
		if err != nil {
			return done, fmt.Errorf("recounting tokens with %s: %w", encoding, err)
		}
		done += n
		if n < sqlkit.RecountBatch {
			return done, nil
		}
	}
}
