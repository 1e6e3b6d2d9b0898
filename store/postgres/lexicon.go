package postgres

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
)

// The write path's two dictionaries in memory: what to_tsvector makes of
// a word (lexemes), and the id of each term in the terms table (termIDs).
// Both spare a write the work Postgres would redo for every word and term
// of every item: after a few thousand items nearly every word of a new
// item has been seen.

// maxCachedWords bounds the words and terms each cache holds; a full cache
// is emptied and starts again.
const maxCachedWords = 1 << 17

// maxWordsPerItem is the longest text (in words) whose lexemes are counted
// from the cache. Postgres clamps positions at 16,383 and merges the
// positions clamped there, so a longer text's counts are left to
// to_tsvector itself.
const maxWordsPerItem = 5000

// maxCountedTF is the highest term count the cache counts: a tsvector
// keeps at most 255 positions of a lexeme, so a text with a term met more
// often is counted by to_tsvector itself.
const maxCountedTF = 254

// lexemeCache maps a word (as words writes it) to its lexeme, "" for a
// stop word. Only words the parser reads as at most one token (the
// positions 'simple' gives them) with at most one lexeme at one position
// are cached, so that a text's counts are the sums of its words'; a text
// with another word is analysed whole.
type lexemeCache struct {
	mu sync.RWMutex
	m  map[string]string
}

func newLexemeCache() *lexemeCache { return &lexemeCache{m: map[string]string{}} }

// analyze sets the terms, counts and length of every item, from the cache
// where it can and otherwise from to_tsvector, in one round trip for the
// words the cache lacks and one for the texts it cannot count, both
// outside the write transaction.
func (s *Store) analyze(ctx context.Context, items []encodedItem) error {
	type plan struct {
		words []string
		whole bool // analysed by to_tsvector as one text
	}
	plans := make([]plan, len(items))
	var unknown []string
	seen := map[string]bool{}
	s.lexemes.mu.RLock()
	for i := range items {
		w := strings.Fields(items[i].searchTxt)
		if len(w) > maxWordsPerItem {
			plans[i].whole = true
			continue
		}
		plans[i].words = w
		for _, word := range w {
			if _, ok := s.lexemes.m[word]; !ok && !seen[word] {
				seen[word] = true
				unknown = append(unknown, word)
			}
		}
	}
	s.lexemes.mu.RUnlock()

	learned := map[string]string{}
	uncacheable := map[string]bool{}
	if len(unknown) > 0 {
		err := s.read(ctx, func(ctx context.Context) error {
			clear(learned)
			clear(uncacheable)
			rows, err := s.pool.Query(ctx, `SELECT d.w, u.lexeme, cardinality(u.positions),
				       (SELECT max(p) FROM unnest(to_tsvector('simple', d.w)) AS t, unnest(t.positions) AS p)
				FROM unnest($1::text[]) AS d (w)
				LEFT JOIN LATERAL unnest(to_tsvector('`+textConfig+`', d.w)) AS u ON true`, unknown)
			if err != nil {
				return err
			}
			var (
				word      string
				lex       *string
				n, tokens *int
			)
			_, err = pgx.ForEachRow(rows, []any{&word, &lex, &n, &tokens}, func() error {
				_, twice := learned[word]
				switch {
				case tokens != nil && *tokens > 1, twice, lex != nil && *n != 1:
					uncacheable[word] = true
				case lex == nil:
					learned[word] = "" // a stop word
				default:
					learned[word] = *lex
				}
				return nil
			})
			return err
		})
		if err != nil {
			return fmt.Errorf("analysing the texts' words: %w", err)
		}
		for w := range uncacheable {
			delete(learned, w)
		}
	}

	var whole []int
	s.lexemes.mu.Lock()
	if len(s.lexemes.m)+len(learned) > maxCachedWords {
		clear(s.lexemes.m)
	}
	for w, l := range learned {
		s.lexemes.m[w] = l
	}
	s.lexemes.mu.Unlock()
	s.lexemes.mu.RLock()
	at := map[string]int{} // a term's index in the item's terms
	for i := range items {
		if plans[i].whole {
			whole = append(whole, i)
			continue
		}
		if !countFromCache(&items[i], plans[i].words, s.lexemes.m, learned, uncacheable, at) {
			whole = append(whole, i)
		}
	}
	s.lexemes.mu.RUnlock()
	return s.analyzeWhole(ctx, items, whole)
}

// countFromCache sets e's terms, counts and length from the lexemes of
// its words, and tells whether it could: every word known and cacheable,
// no count above maxCountedTF.
func countFromCache(e *encodedItem, words []string, cache, learned map[string]string, uncacheable map[string]bool, at map[string]int) bool {
	e.terms, e.tfs, e.docLen = e.terms[:0], e.tfs[:0], 0
	clear(at)
	for _, w := range words {
		if uncacheable[w] {
			return false
		}
		lex, ok := cache[w]
		if !ok {
			// The cache was emptied after this batch read it: the word is
			// among those learned or was cached before.
			if lex, ok = learned[w]; !ok {
				return false
			}
		}
		if lex == "" {
			continue
		}
		j, ok := at[lex]
		if !ok {
			j = len(e.terms)
			at[lex] = j
			e.terms = append(e.terms, lex)
			e.tfs = append(e.tfs, 0)
		}
		e.tfs[j]++
		e.docLen++
		if e.tfs[j] > maxCountedTF {
			return false
		}
	}
	return true
}

// analyzeWhole asks Postgres for the lexemes of the texts of items[at...]
// and their counts, in one round trip.
func (s *Store) analyzeWhole(ctx context.Context, items []encodedItem, at []int) error {
	if len(at) == 0 {
		return nil
	}
	texts := make([]string, len(at))
	for k, i := range at {
		texts[k] = items[i].searchTxt
	}
	return s.read(ctx, func(ctx context.Context) error {
		for _, i := range at {
			items[i].terms, items[i].tfs, items[i].docLen = items[i].terms[:0], items[i].tfs[:0], 0
		}
		rows, err := s.pool.Query(ctx, `SELECT d.ord::int - 1, u.lexeme, cardinality(u.positions)
			FROM unnest($1::text[]) WITH ORDINALITY AS d (txt, ord),
			     LATERAL unnest(to_tsvector('`+textConfig+`', d.txt)) AS u`, texts)
		if err != nil {
			return fmt.Errorf("analysing the texts: %w", err)
		}
		defer rows.Close()
		var (
			k, tf int
			term  string
		)
		_, err = pgx.ForEachRow(rows, []any{&k, &term, &tf}, func() error {
			e := &items[at[k]]
			e.terms = append(e.terms, term)
			e.tfs = append(e.tfs, tf)
			e.docLen += tf
			return nil
		})
		if err != nil {
			return fmt.Errorf("analysing the texts: %w", err)
		}
		return nil
	})
}

// termIDCache maps terms to their ids in the terms table. Ids never
// change while the table's storage does not (terms are never deleted), so
// an entry is good as long as the table's file node is the one it was
// read under (epoch): a restore or a TRUNCATE changes it, and the write
// that sees the change empties the cache and runs again.
type termIDCache struct {
	mu    sync.Mutex
	epoch int64 // pg_relation_filenode('terms') the entries were read under; 0: none yet
	m     map[string]int32
}

func newTermIDCache() *termIDCache { return &termIDCache{m: map[string]int32{}} }

// reset empties the cache unless it is already at epoch.
func (c *termIDCache) reset(epoch int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch != epoch {
		clear(c.m)
		c.epoch = epoch
	}
}

// termsEpochSQL reads the terms table's file node, the epoch of term ids.
const termsEpochSQL = `SELECT coalesce(pg_relation_filenode('terms'), 0)::bigint`
