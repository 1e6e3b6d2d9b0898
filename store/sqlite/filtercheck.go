package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/store/internal/sqlkit"
)

// The generators check their ranked hits against the request's filters in
// growing rounds (fullText.filtered, ann.TopPassing): at 10k traces a
// search with a kind and an area filter checked about a thousand rows per
// request, each an indexed read of an item row and its tags, and that was
// most of a filtered search's time. The rows' filtered columns
// (kind, created_at, metadata, tags) are therefore kept in the item cache
// beside the decoded items, under the same generation, and the filters are
// tested in memory; rows not kept yet are read once, without the filter,
// and kept. A filter this file cannot test exactly as the SQL does (a
// number, which SQLite compares as integer or real; a store-maintained
// column, which changes with access counts) and a cache that does not
// reflect the read's snapshot leave the check to the SQL, as before.

// filterRow is what the filters test of one item row.
type filterRow struct {
	seq       int64
	kind      string
	createdAt string
	tags      []string
	// rawMetadata is the metadata column, read into metadata on the first
	// test of a metadata key (most filters test none: kind, tags, time).
	rawMetadata string
	parseOnce   sync.Once
	// metadata holds each key's first value in the row's metadata, as
	// json_extract finds it; nil when the row's metadata is not a plain
	// object of valid UTF-8 (then only the SQL decides).
	metadata map[string]json.RawMessage
}

// meta returns the row's metadata values by key (filterRow.metadata).
func (r *filterRow) meta() map[string]json.RawMessage {
	r.parseOnce.Do(func() { r.metadata = firstValues(r.rawMetadata) })
	return r.metadata
}

// footprint estimates a row's memory.
func (r *filterRow) footprint(id string) int64 {
	// The metadata text, and its values once parsed (a map entry per key,
	// about as large again).
	n := 256 + int64(len(id)+len(r.kind)+len(r.createdAt)) + 3*int64(len(r.rawMetadata))
	for _, t := range r.tags {
		n += 32 + int64(len(t))
	}
	return n
}

// memFilter is h4r.Filters in the form a filterRow is tested against.
type memFilter struct {
	kinds   []string // any of; nil: any kind
	tags    []string // all of, deduplicated
	anyTags []string // at least one; nil: no condition
	after   string   // created_at >= after; "": none
	before  string   // created_at < before; "": none
	meta    []metaCondition
}

// metaCondition is an equality test on a metadata key: a string or a
// boolean value of the same JSON type.
type metaCondition struct {
	key    string
	str    string
	isBool bool
	boolV  bool
}

// memFilterOf is f compiled for a generator's checks: nil when a condition
// is left to SQL (compileFilter).
func memFilterOf(f h4r.Filters) *memFilter {
	if m, ok := compileFilter(f); ok {
		return &m
	}
	return nil
}

// compileFilter returns f as a memFilter, and false when one of its
// conditions is left to SQL (see the top of this file). Lists are read
// back as json_each reads the JSON the SQL binds (jsonList), so that both
// compare the same strings.
func compileFilter(f h4r.Filters) (memFilter, bool) {
	var m memFilter
	roundTrip := func(values []string) ([]string, bool) {
		if len(values) == 0 {
			return nil, true
		}
		list, err := jsonList(values)
		if err != nil {
			return nil, false
		}
		var out []string
		if err := json.Unmarshal([]byte(list), &out); err != nil || len(out) != len(values) {
			return nil, false
		}
		return out, true
	}
	var ok bool
	if m.kinds, ok = roundTrip(f.Kinds); !ok {
		return m, false
	}
	if len(f.Tags) > 0 {
		tags := slices.Clone(f.Tags)
		slices.Sort(tags)
		if m.tags, ok = roundTrip(slices.Compact(tags)); !ok {
			return m, false
		}
		// The SQL counts the item's tags among the list: a list that
		// repeats a value after json_each's reading would count it once.
		sorted := slices.Clone(m.tags)
		slices.Sort(sorted)
		if len(slices.Compact(sorted)) != len(m.tags) {
			return m, false
		}
	}
	if m.anyTags, ok = roundTrip(f.AnyTags); !ok {
		return m, false
	}
	if !f.CreatedAfter.IsZero() {
		m.after = formatTime(f.CreatedAfter)
	}
	if !f.CreatedBefore.IsZero() {
		m.before = formatTime(f.CreatedBefore)
	}
	for key, v := range f.Metadata {
		if !h4r.ValidMetadataKey(key) || sqlkit.MaintainedColumn(key) != "" {
			return m, false
		}
		switch x := v.(type) {
		case string:
			if strings.IndexByte(x, 0) >= 0 {
				return m, false
			}
			m.meta = append(m.meta, metaCondition{key: key, str: x})
		case bool:
			m.meta = append(m.meta, metaCondition{key: key, isBool: true, boolV: x})
		default:
			return m, false
		}
	}
	return m, true
}

// pass reports whether r passes m; decided is false when r's metadata
// could not be read in memory and m tests metadata.
func (m *memFilter) pass(r *filterRow) (ok, decided bool) {
	if m.kinds != nil && !slices.Contains(m.kinds, r.kind) {
		return false, true
	}
	for _, t := range m.tags {
		if !slices.Contains(r.tags, t) {
			return false, true
		}
	}
	if m.anyTags != nil && !slices.ContainsFunc(r.tags, func(t string) bool { return slices.Contains(m.anyTags, t) }) {
		return false, true
	}
	if m.after != "" && r.createdAt < m.after {
		return false, true
	}
	if m.before != "" && r.createdAt >= m.before {
		return false, true
	}
	if len(m.meta) == 0 {
		return true, true
	}
	metadata := r.meta()
	if metadata == nil {
		return false, false
	}
	for _, c := range m.meta {
		raw, ok := metadata[c.key]
		if !ok {
			return false, true
		}
		if c.isBool {
			if !bytes.Equal(raw, []byte("true")) && !bytes.Equal(raw, []byte("false")) {
				return false, true
			}
			if bytes.Equal(raw, []byte("true")) != c.boolV {
				return false, true
			}
			continue
		}
		if len(raw) < 2 || raw[0] != '"' {
			return false, true
		}
		if s := raw[1 : len(raw)-1]; bytes.IndexByte(s, '\\') < 0 {
			if string(s) != c.str { // no escapes: the text is the value
				return false, true
			}
			continue
		}
		if bytes.Contains(bytes.ToLower(raw), []byte(`\ud`)) {
			// A surrogate escape: Go replaces a lone one, SQLite does not.
			return false, false
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil || s != c.str {
			return false, true
		}
	}
	return true, true
}

// firstValues reads a metadata object's keys and each one's first value
// (json_extract's reading of a repeated key). It returns nil when the text
// is not an object or holds invalid UTF-8, which Go's decoder would
// replace and SQLite would not. It scans the text once, without decoding
// the values (json.Decoder took most of a cold filter check's time).
func firstValues(metadata string) map[string]json.RawMessage {
	if !utf8.ValidString(metadata) || !json.Valid([]byte(metadata)) {
		return nil
	}
	// The text is valid JSON from here: the scan needs no checks.
	s := metadata
	i := skipSpace(s, 0)
	if s[i] != '{' {
		return nil
	}
	out := map[string]json.RawMessage{}
	i = skipSpace(s, i+1)
	if s[i] == '}' {
		return out
	}
	for {
		end := endOfString(s, i)
		key := s[i+1 : end-1]
		if strings.IndexByte(key, '\\') >= 0 {
			if err := json.Unmarshal([]byte(s[i:end]), &key); err != nil {
				return nil
			}
		}
		i = skipSpace(s, skipSpace(s, end)+1) // past the colon
		vEnd := endOfValue(s, i)
		if _, seen := out[key]; !seen {
			out[key] = json.RawMessage(s[i:vEnd])
		}
		i = skipSpace(s, vEnd)
		if s[i] != ',' {
			return out // the closing brace
		}
		i = skipSpace(s, i+1)
	}
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// endOfString returns the index just past the JSON string that starts at
// s[i].
func endOfString(s string, i int) int {
	for j := i + 1; ; j++ {
		switch s[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
}

// endOfValue returns the index just past the JSON value that starts at
// s[i].
func endOfValue(s string, i int) int {
	switch s[i] {
	case '"':
		return endOfString(s, i)
	case '{', '[':
		depth := 0
		for j := i; ; j++ {
			switch s[j] {
			case '"':
				j = endOfString(s, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
	}
	j := i
	for j < len(s) && !strings.ContainsRune(",}] \t\n\r", rune(s[j])) {
		j++
	}
	return j
}

// filterRows returns the filter rows of ids as tx sees them (an id without
// an item is absent), from the item cache, reading and keeping those it
// lacks; ok is false when the cache does not reflect tx's snapshot (the
// caller then checks with SQL).
func (s *Store) filterRows(ctx context.Context, tx *sql.Tx, ids []string) (_ map[string]*filterRow, ok bool, err error) {
	if s.items.budget == 0 {
		return nil, false, nil
	}
	gen, current, err := s.itemCacheAt(ctx, tx)
	if err != nil || !current {
		return nil, false, err
	}
	out, missing := s.items.lookupFilters(ids)
	if len(missing) > 0 {
		read, err := fetchFilterRows(ctx, tx, missing)
		if err != nil {
			return nil, false, err
		}
		for id, r := range read {
			out[id] = r
		}
		s.items.putFilters(gen, read)
	}
	return out, true, nil
}

// fetchFilterRows reads the filter rows of ids.
func fetchFilterRows(ctx context.Context, tx *sql.Tx, ids []string) (_ map[string]*filterRow, err error) {
	list, err := jsonList(ids)
	if err != nil {
		return nil, err
	}
	rows, err := tx.QueryContext(ctx, `SELECT i.id, i.seq, i.kind, i.created_at, i.metadata FROM items i WHERE i.id IN (SELECT value FROM json_each(?))`, list)
	if err != nil {
		return nil, fmt.Errorf("reading the filtered columns: %w", err)
	}
	defer func() { err = errors.Join(err, rows.Close()) }()
	out := make(map[string]*filterRow, len(ids))
	for rows.Next() {
		var id string
		r := &filterRow{}
		if err := rows.Scan(&id, &r.seq, &r.kind, &r.createdAt, &r.rawMetadata); err != nil {
			return nil, fmt.Errorf("reading the filtered columns of a row: %w", err)
		}
		out[id] = r
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the filtered columns: %w", err)
	}
	tags, err := tx.QueryContext(ctx, `SELECT t.item_id, t.tag FROM item_tags t WHERE t.item_id IN (SELECT value FROM json_each(?))`, list)
	if err != nil {
		return nil, fmt.Errorf("reading the tags of the filtered rows: %w", err)
	}
	defer func() { err = errors.Join(err, tags.Close()) }()
	for tags.Next() {
		var id, tag string
		if err := tags.Scan(&id, &tag); err != nil {
			return nil, fmt.Errorf("reading a tag of a filtered row: %w", err)
		}
		if r := out[id]; r != nil {
			r.tags = append(r.tags, tag)
		}
	}
	if err := tags.Err(); err != nil {
		return nil, fmt.Errorf("reading the tags of the filtered rows: %w", err)
	}
	return out, nil
}

// memPassing tests the rows of ids against f in memory: the rows tx sees
// and whether each passes. ok is false when it cannot decide (no filter
// in memory, a cache behind tx's snapshot, a row whose metadata only SQL
// reads).
func (s *Store) memPassing(ctx context.Context, tx *sql.Tx, f *memFilter, ids []string) (_ map[string]*filterRow, _ map[string]bool, ok bool, err error) {
	if f == nil {
		return nil, nil, false, nil
	}
	rows, ok, err := s.filterRows(ctx, tx, ids)
	if err != nil || !ok {
		return nil, nil, false, err
	}
	pass := make(map[string]bool, len(ids))
	for _, id := range ids {
		r := rows[id]
		if r == nil {
			continue
		}
		p, decided := f.pass(r)
		if !decided {
			return nil, nil, false, nil
		}
		if p {
			pass[id] = true
		}
	}
	return rows, pass, true, nil
}

// passingByID returns which of ids pass the filters (f in memory, where
// and args their SQL): in memory when it can (memPassing), else with SQL
// (passingIDs).
func (s *Store) passingByID(ctx context.Context, tx *sql.Tx, f *memFilter, ids []string, where string, args []any) (map[string]bool, error) {
	_, pass, ok, err := s.memPassing(ctx, tx, f, ids)
	if err != nil {
		return nil, err
	}
	if ok {
		return pass, nil
	}
	return passingIDs(ctx, tx, ids, where, args)
}

// passingRanked returns which of the ranked rows pass the filters, by seq,
// as passingRows does: in memory a hit passes only if tx sees its id at
// the row the index ranked (the index may hold a write tx does not see).
func (s *Store) passingRanked(ctx context.Context, tx *sql.Tx, f *memFilter, ranked []rankedText, where string, args []any) (map[uint32]bool, error) {
	ids := make([]string, len(ranked))
	for i, r := range ranked {
		ids[i] = r.id
	}
	rows, byID, ok, err := s.memPassing(ctx, tx, f, ids)
	if err != nil {
		return nil, err
	}
	if ok {
		pass := make(map[uint32]bool, len(ranked))
		for _, r := range ranked {
			if byID[r.id] && rows[r.id].seq == int64(r.seq) {
				pass[r.seq] = true
			}
		}
		return pass, nil
	}
	seqs := make([]uint32, len(ranked))
	for i, r := range ranked {
		seqs[i] = r.seq
	}
	return passingRows(ctx, tx, seqs, where, args)
}
