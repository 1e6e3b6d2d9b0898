package sqlite

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/h4r/h4r"
)

// Values the random items and filters draw from: tags and strings with
// spaces, quotes, HTML characters Go's encoder escapes, and non-ASCII.
var (
	checkKinds  = []string{"note", "commit_trace", "decision"}
	checkTags   = []string{"pkg/auth", "a b", `q"uote`, "<&>", "é", "cmd/server"}
	checkValues = []string{"landed", "pending", "Landed", "<b>&amp;", `say "hi"`, "ünï", "", "\u2028"}
)

// randomCheckItem is an item whose filtered columns are drawn at random:
// kind, tags, creation time, and metadata keys that hold a string, a
// boolean, a number or nothing (status, flag, mixed), plus sometimes a
// source given twice (Extra beside the well-known field), which SQLite
// reads as its first value.
func randomCheckItem(r *rand.Rand, id string, base time.Time) h4r.Item {
	it := h4r.Item{ID: id, Kind: checkKinds[r.IntN(len(checkKinds))], Text: "text of " + id}
	for _, t := range checkTags {
		if r.IntN(3) == 0 {
			it.Metadata.Tags = append(it.Metadata.Tags, t)
		}
	}
	it.Metadata.CreatedAt = base.Add(time.Duration(r.IntN(100)) * time.Hour)
	extra := map[string]any{}
	if r.IntN(4) != 0 {
		extra["status"] = checkValues[r.IntN(len(checkValues))]
	}
	if r.IntN(2) == 0 {
		extra["flag"] = r.IntN(2) == 0
	}
	switch r.IntN(4) {
	case 0:
		extra["mixed"] = checkValues[r.IntN(len(checkValues))]
	case 1:
		extra["mixed"] = r.IntN(2) == 0
	case 2:
		extra["mixed"] = float64(r.IntN(3))
	}
	if r.IntN(4) == 0 {
		it.Metadata.Source = checkValues[r.IntN(len(checkValues))]
		extra["source"] = checkValues[r.IntN(len(checkValues))]
	}
	if len(extra) > 0 {
		it.Metadata.Extra = extra
	}
	return it
}

// randomCheckFilter draws filters that the in-memory check decides
// (compileFilter): kinds, all-of and any-of tags, a time range, and
// string and boolean metadata tests.
func randomCheckFilter(r *rand.Rand, base time.Time) h4r.Filters {
	var f h4r.Filters
	pick := func(from []string, n int) []string {
		var out []string
		for range n {
			out = append(out, from[r.IntN(len(from))])
		}
		return out
	}
	if r.IntN(2) == 0 {
		f.Kinds = pick(checkKinds, 1+r.IntN(2))
	}
	if r.IntN(3) == 0 {
		f.Tags = pick(append(slices.Clone(checkTags), "nope"), 1+r.IntN(2))
	}
	if r.IntN(2) == 0 {
		f.AnyTags = pick(append(slices.Clone(checkTags), "nope"), 1+r.IntN(3))
	}
	if r.IntN(3) == 0 {
		f.CreatedAfter = base.Add(time.Duration(r.IntN(100)) * time.Hour)
	}
	if r.IntN(3) == 0 {
		f.CreatedBefore = base.Add(time.Duration(r.IntN(100)) * time.Hour)
	}
	f.Metadata = map[string]any{}
	if r.IntN(2) == 0 {
		f.Metadata["status"] = checkValues[r.IntN(len(checkValues))]
	}
	if r.IntN(3) == 0 {
		f.Metadata["flag"] = r.IntN(2) == 0
	}
	if r.IntN(3) == 0 {
		if r.IntN(2) == 0 {
			f.Metadata["mixed"] = checkValues[r.IntN(len(checkValues))]
		} else {
			f.Metadata["mixed"] = r.IntN(2) == 0
		}
	}
	if r.IntN(4) == 0 {
		f.Metadata["source"] = checkValues[r.IntN(len(checkValues))]
	}
	if r.IntN(6) == 0 {
		f.Metadata["absent"] = "landed"
	}
	return f
}

// TestFilterCheckInMemoryEqualsSQL proves the generators' in-memory filter
// check (memPassing, through passingByID and passingRanked) equal to the
// SQL check it replaces (passingIDs, passingRows) on random items and
// filters: the same ids and rows pass, whether the rows come from the file
// or from the cache, after writes of this process (updates that change
// kinds, tags, times and metadata, deletes, re-creates) and a write by
// another process. It also checks that the in-memory path did decide
// (it is not the SQL fallback that passes the comparison).
func TestFilterCheckInMemoryEqualsSQL(t *testing.T) {
	s, path := newTestStore(t)
	ctx := t.Context()
	r := rand.New(rand.NewPCG(15, 2026))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var ids []string
	for i := range 300 {
		ids = append(ids, fmt.Sprintf("it%03d", i))
	}
	write := func(n int) {
		var batch []h4r.Item
		for _, i := range r.Perm(len(ids))[:n] {
			batch = append(batch, randomCheckItem(r, ids[i], base))
		}
		if _, err := s.Upsert(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	write(len(ids))
	asked := append(slices.Clone(ids), "missing", "it999")
	compare := func(step string) {
		t.Helper()
		decided := 0
		for range 60 {
			f := randomCheckFilter(r, base)
			mem, ok := compileFilter(f)
			if !ok {
				t.Fatalf("%s: filter %+v was left to SQL", step, f)
			}
			where, args, err := whereFilters(f)
			if err != nil {
				t.Fatal(err)
			}
			err = s.readTx(ctx, func(tx *sql.Tx) error {
				want, err := passingIDs(ctx, tx, asked, where, args)
				if err != nil {
					return err
				}
				// Twice: rows read from the file, then from the cache.
				for range 2 {
					_, got, ok, err := s.memPassing(ctx, tx, &mem, asked)
					if err != nil {
						return err
					}
					if ok {
						decided++
						if !maps.Equal(got, want) {
							t.Errorf("%s: filter %+v: in memory %v, SQL %v", step, f, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
						}
					}
				}
				ranked, err := rankedRows(tx)
				if err != nil {
					return err
				}
				seqs := make([]uint32, len(ranked))
				for i, rt := range ranked {
					seqs[i] = rt.seq
				}
				wantRows, err := passingRows(ctx, tx, seqs, where, args)
				if err != nil {
					return err
				}
				gotRows, err := s.passingRanked(ctx, tx, &mem, ranked, where, args)
				if err != nil {
					return err
				}
				if !maps.Equal(gotRows, wantRows) {
					t.Errorf("%s: filter %+v: rows in memory %v, SQL %v", step, f, slices.Sorted(maps.Keys(gotRows)), slices.Sorted(maps.Keys(wantRows)))
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		if decided == 0 {
			t.Fatalf("%s: the in-memory check never decided", step)
		}
	}
	compare("first read")
	for round := range 3 {
		write(40)
		for _, i := range r.Perm(len(ids))[:5] {
			if err := s.Delete(ctx, ids[i]); err != nil && h4r.ErrorCode(err) != h4r.ENOTFOUND {
				t.Fatal(err)
			}
		}
		compare(fmt.Sprintf("after writes, round %d", round+1))
	}
	// Another process changes metadata the cache holds.
	if _, err := rawDB(t, path).ExecContext(ctx, `UPDATE items SET metadata = json_set(metadata, '$.status', 'landed') WHERE seq % 3 = 0`); err != nil {
		t.Fatal(err)
	}
	compare("after another process's write")
}

// rankedRows is every row as the full-text index would rank them (seq
// and id), in seq order.
func rankedRows(tx *sql.Tx) ([]rankedText, error) {
	rows, err := tx.Query(`SELECT seq, id FROM items ORDER BY seq`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []rankedText
	for rows.Next() {
		var rt rankedText
		var seq int64
		if err := rows.Scan(&seq, &rt.id); err != nil {
			return nil, err
		}
		rt.seq = uint32(seq)
		out = append(out, rt)
	}
	return out, rows.Err()
}

// TestCompileFilterLeavesToSQL: numbers (integer or real to SQLite) and
// the store-maintained keys (columns that access counts change) are never
// tested in memory.
func TestCompileFilterLeavesToSQL(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    h4r.Filters
		want bool
	}{
		{"kind and tags", h4r.Filters{Kinds: []string{"note"}, AnyTags: []string{"a"}}, true},
		{"string metadata", h4r.Filters{Metadata: map[string]any{"status": "landed"}}, true},
		{"boolean metadata", h4r.Filters{Metadata: map[string]any{"flag": true}}, true},
		{"number metadata", h4r.Filters{Metadata: map[string]any{"rank": 2.0}}, false},
		{"maintained key", h4r.Filters{Metadata: map[string]any{"version": 3.0}}, false},
		{"maintained key as a string", h4r.Filters{Metadata: map[string]any{"accessCount": "3"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := compileFilter(tc.f); ok != tc.want {
				t.Errorf("compileFilter decides in memory: %v, want %v", ok, tc.want)
			}
		})
	}
}

// firstValuesDecoder is firstValues written with json.Decoder, as it was
// first: the reference for the scan.
func firstValuesDecoder(metadata string) map[string]json.RawMessage {
	if !utf8.ValidString(metadata) {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(metadata))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	out := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		key, ok := tok.(string)
		if !ok {
			return nil
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil
		}
		if _, seen := out[key]; !seen {
			out[key] = v
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil
	}
	if _, err := dec.Token(); err != io.EOF { // nothing after it
		return nil
	}
	return out
}

// TestFirstValuesEqualsDecoder: the scan reads the same first values as
// json.Decoder on random objects (nested values, escapes in keys and
// strings, white space, repeated keys, numbers, literals) and refuses what
// it refuses.
func TestFirstValuesEqualsDecoder(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 15))
	keys := []string{"status", "repo", `st\u0061tus`, "a b", "é", `q\"k`, "tags"}
	ws := func() string { return []string{"", "", " ", "\n\t ", "\r"}[r.IntN(5)] }
	var value func(depth int) string
	value = func(depth int) string {
		switch n := r.IntN(9); {
		case n == 0 && depth < 3:
			var parts []string
			for range r.IntN(3) {
				parts = append(parts, ws()+`"`+keys[r.IntN(len(keys))]+`"`+ws()+":"+ws()+value(depth+1)+ws())
			}
			return "{" + strings.Join(parts, ",") + "}"
		case n == 1 && depth < 3:
			var parts []string
			for range r.IntN(3) {
				parts = append(parts, ws()+value(depth+1)+ws())
			}
			return "[" + strings.Join(parts, ",") + "]"
		case n == 2:
			return []string{"true", "false", "null"}[r.IntN(3)]
		case n == 3:
			return []string{"0", "-1.5e3", "12345678901234567890", "3.25"}[r.IntN(4)]
		default:
			return `"` + []string{"landed", `say \"hi\" {[,]}`, `\u00e9t\u00e9`, "ünï", `back\\slash`, "", `\ud83d\ude00`, "a,b}c"}[r.IntN(8)] + `"`
		}
	}
	cases := []string{"", "[]", "{}", " { } ", `{"a":1}x`, `{"a":}`, "\"x\"", `{"a":"\xff"}`, `{"a":1,}`, `{"a" 1}`, `null`}
	for range 3000 {
		var parts []string
		for range r.IntN(6) {
			parts = append(parts, ws()+`"`+keys[r.IntN(len(keys))]+`"`+ws()+":"+ws()+value(0)+ws())
		}
		cases = append(cases, ws()+"{"+strings.Join(parts, ",")+"}"+ws())
	}
	for _, c := range cases {
		got, want := firstValues(c), firstValuesDecoder(c)
		if (got == nil) != (want == nil) || !maps.EqualFunc(got, want, func(a, b json.RawMessage) bool { return string(a) == string(b) }) {
			t.Fatalf("metadata %q: scan %q, decoder %q", c, got, want)
		}
	}
}
