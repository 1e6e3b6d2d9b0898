package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/index/vecindex"
)

// writeItemsOneByOne is writeItems as it was before the multi-row
// statements: every occurrence clears and rewrites its item's tags and
// links, one statement a row. The reference the fast path must equal.
func writeItemsOneByOne(ctx context.Context, tx *sql.Tx, items []encodedItem, updatedAt, encoding string) error {
	for _, e := range items {
		it := &e.item
		if _, err := tx.ExecContext(ctx, upsertItemSQL, it.ID, it.Kind, it.Text, e.content, e.metadata, e.createdAt, updatedAt, e.byteSize, e.tokens, encoding); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM item_tags WHERE item_id = ?`, it.ID); err != nil {
			return err
		}
		for _, tag := range it.Metadata.Tags {
			if _, err := tx.ExecContext(ctx, `INSERT INTO item_tags (item_id, tag) VALUES (?, ?)`, it.ID, tag); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM links WHERE source = ?`, it.ID); err != nil {
			return err
		}
		for pos, l := range it.Links {
			if _, err := tx.ExecContext(ctx, `INSERT INTO links (source, position, target, type, strength, target_type, context) VALUES (?, ?, ?, ?, ?, ?, ?)`,
				it.ID, pos, l.Target, l.Type, l.Strength, l.TargetType, l.Context); err != nil {
				return err
			}
		}
	}
	return nil
}

// putVectorsOneByOne is putVectors as it was: one statement a vector.
func putVectorsOneByOne(ctx context.Context, tx *sql.Tx, model string, ids []string, vecs [][]float32) error {
	for i, id := range ids {
		if _, err := tx.ExecContext(ctx, `INSERT INTO item_vectors (item_id, model, vector)
			SELECT ?1, ?2, ?3 WHERE EXISTS (SELECT 1 FROM items WHERE id = ?1)
			ON CONFLICT (item_id) DO UPDATE SET model = excluded.model, vector = excluded.vector`, id, model, vecindex.EncodeFloat32(vecs[i])); err != nil {
			return err
		}
	}
	return nil
}

// dumpTables is every row a write leaves, as one string to compare.
func dumpTables(t *testing.T, s *Store) string {
	t.Helper()
	var sb strings.Builder
	for _, q := range []string{
		`SELECT seq, id, kind, text, coalesce(content, 'NULL'), metadata, created_at, updated_at, version, byte_size, tokens, token_encoding FROM items ORDER BY seq`,
		`SELECT item_id, tag FROM item_tags ORDER BY item_id, tag`,
		`SELECT source, position, target, type, strength, target_type, context FROM links ORDER BY source, position`,
		`SELECT item_id, model, hex(vector) FROM item_vectors ORDER BY item_id`,
	} {
		rows, err := s.readers.QueryContext(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		cols, err := rows.Columns()
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintln(&sb, vals...)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			t.Fatal(err)
		}
		sb.WriteString("--\n")
	}
	return sb.String()
}

// writeItems and putVectors (tags, links and vectors in statements of
// many rows, only the last occurrence of an id written) leave exactly the
// rows that writing every item in turn, one statement a row, leaves:
// new ids, replaced ids with other tags and links or none, ids repeated
// in a batch (new and existing), batches past a chunk of rows, and
// vectors of ids that are not items.
func TestWriteItemsEqualsOneByOne(t *testing.T) {
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	fast, _ := newTestStore(t, WithClock(func() time.Time { return now }))
	slow, _ := newTestStore(t, WithClock(func() time.Time { return now }))
	item := func(id, text string, tags []string, links ...string) h4r.Item {
		it := h4r.Item{ID: id, Kind: "note", Text: text, Metadata: h4r.Metadata{Tags: tags}}
		for i, target := range links {
			it.Links = append(it.Links, h4r.Link{Type: "relates_to", Target: target, Strength: float64(i+1) / 10, Context: "why " + target})
		}
		if len(tags) > 0 {
			it.Content = map[string]any{"tag": tags[0]}
		}
		return it
	}
	big := make([]h4r.Item, 300)
	for i := range big {
		big[i] = item(fmt.Sprintf("big-%03d", i), fmt.Sprintf("text %d", i), []string{"x", fmt.Sprintf("t%d", i%7)},
			fmt.Sprintf("big-%03d", (i+1)%300), fmt.Sprintf("big-%03d", (i+2)%300), "a")
	}
	steps := []struct {
		name  string
		items []h4r.Item
		ghost []string // vector ids that name no item
	}{
		{"new items", []h4r.Item{item("a", "alpha", []string{"t1", "t2"}, "b"), item("b", "beta", nil, "a", "c"), item("c", "gamma", []string{"t3"})}, nil},
		{"replaced and new", []h4r.Item{item("a", "alpha two", []string{"t2", "t4"}), item("d", "delta", []string{"t1"}, "a")}, []string{"ghost"}},
		{"a new id three times", []h4r.Item{item("e", "one", []string{"t1"}, "a"), item("e", "two", []string{"t2", "t3"}, "b", "c"), item("e", "three", []string{"t4"})}, nil},
		{"an existing id twice", []h4r.Item{item("b", "beta two", []string{"t9"}, "d"), item("c", "gamma two", nil), item("b", "beta three", nil)}, nil},
		{"past a chunk", big, []string{"ghost-1", "ghost-2"}},
		{"past a chunk, replaced", append(big[150:], big[:10]...), nil},
	}
	for step, st := range steps {
		// Each step writes on what the steps before left: after a failed
		// one, the stores' contents differ and later steps would only
		// report that again.
		ok := t.Run(st.name, func(t *testing.T) {
			for _, s := range []*Store{fast, slow} {
				encoded, err := s.encodeAll(st.items, now)
				if err != nil {
					t.Fatal(err)
				}
				ids := append([]string(nil), st.ghost...)
				var vecs [][]float32
				for range st.ghost {
					vecs = append(vecs, []float32{-1, 0})
				}
				for i := range encoded {
					ids = append(ids, encoded[i].item.ID)
					vecs = append(vecs, []float32{float32(step), float32(i)})
				}
				err = s.writeTx(t.Context(), func(ctx context.Context, tx *sql.Tx) error {
					if s == fast {
						return errors.Join(writeItems(ctx, tx, encoded, formatTime(now), "enc"), putVectors(ctx, tx, "m", ids, vecs))
					}
					return errors.Join(writeItemsOneByOne(ctx, tx, encoded, formatTime(now), "enc"), putVectorsOneByOne(ctx, tx, "m", ids, vecs))
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			if got, want := dumpTables(t, fast), dumpTables(t, slow); got != want {
				t.Errorf("multi-row writes left\n%s\none by one\n%s", got, want)
			}
		})
		if !ok {
			break
		}
	}
}
