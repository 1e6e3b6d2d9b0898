package sqlite_test

import (
	"database/sql"
	"fmt"
	"math"
	"strings"
	"testing"
	"unicode"

	"github.com/h4r/h4r/store/sqlite"
	"github.com/h4r/h4r/store/storetest"
)

func TestMatchExpression(t *testing.T) {
	many := make([]string, 70)
	want64 := make([]string, 64)
	for i := range many {
		many[i] = fmt.Sprintf("w%d", i)
		if i < 64 {
			want64[i] = fmt.Sprintf(`"w%d"`, i)
		}
	}
	tests := []struct {
		name string
		text string
		want string
	}{
		{"empty", "", ""},
		{"no words", `"*:() -^ '`, ""},
		{"one word", "login", `"login"`},
		{"or of words in order", "login test failures", `"login" OR "test" OR "failures"`},
		{"lower-cased, repeats kept together", "Login LOGIN test login", `"login" OR "login" OR "login" OR "test"`},
		{"punctuation splits", "login-spec-001: #login-button", `"login" OR "login" OR "spec" OR "001" OR "button"`},
		{"operators are words", "a AND b OR NOT near", `"a" OR "and" OR "b" OR "or" OR "not" OR "near"`},
		{"quotes dropped", `"login" test"`, `"login" OR "test"`},
		{"column filter split", "text:login", `"text" OR "login"`},
		{"prefix star dropped", "log*", `"log"`},
		{"unicode letters", "Ünïcödé 日本語 straße", `"ünïcödé" OR "日本語" OR "straße"`},
		{"combining mark stays in the word", "cafe\u0301 x", "\"cafe\u0301\" OR \"x\""},
		{"digits", "error 404 v2", `"error" OR "404" OR "v2"`},
		{"symbols split", "a+b $c d€e", `"a" OR "b" OR "c" OR "d" OR "e"`},
		{"invalid utf-8 splits", "ab\xffcd", `"ab" OR "cd"`},
		{"at most 64 terms", strings.Join(many, " "), strings.Join(want64, " OR ")},
		{"repeats after the 64th term still count", strings.Join(many, " ") + " w0", `"w0" OR ` + strings.Join(want64, " OR ")},
		{"at most 128 occurrences", strings.Repeat("w ", 200), strings.TrimSuffix(strings.Repeat(`"w" OR `, 128), " OR ")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sqlite.MatchExpression(tt.text); got != tt.want {
				t.Errorf("MatchExpression(%q) = %s, want %s", tt.text, got, tt.want)
			}
		})
	}
}

// FTS5's bm25() sums over the MATCH expression's phrases, so a term
// written twice weighs exactly twice: what makes matchTerms's repeats a
// query-term frequency.
func TestMatchRepeatedTermCountsTwice(t *testing.T) {
	db := ftsTable(t)
	for _, doc := range []string{"apple banana", "apple cherry", "cherry pie", "banana bread with apple"} {
		if _, err := db.Exec(`INSERT INTO t (text) VALUES (?)`, doc); err != nil {
			t.Fatal(err)
		}
	}
	score := func(expr string) map[int64]float64 {
		rows, err := db.Query(`SELECT rowid, bm25(t) FROM t WHERE t MATCH ?`, expr)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[int64]float64{}
		for rows.Next() {
			var id int64
			var s float64
			if err := rows.Scan(&id, &s); err != nil {
				t.Fatal(err)
			}
			out[id] = s
		}
		return out
	}
	tests := []struct {
		name         string
		once, twice  string
		banana, rest string // the repeated term, the other one
	}{
		{"one term", `"banana"`, `"banana" OR "banana"`, `"banana"`, ""},
		{"with another term", `"banana" OR "cherry"`, `"banana" OR "banana" OR "cherry"`, `"banana"`, `"cherry"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, twice := score(tt.banana), score(tt.twice)
			rest := map[int64]float64{}
			if tt.rest != "" {
				rest = score(tt.rest)
			}
			if len(twice) != len(score(tt.once)) {
				t.Fatalf("repeating a term changed the matches: %v against %v", twice, score(tt.once))
			}
			for id, got := range twice {
				want := 2*b[id] + rest[id]
				if math.Abs(got-want) > 1e-9*math.Abs(want) {
					t.Errorf("row %d: bm25 %v, want 2×%v + %v = %v", id, got, b[id], rest[id], want)
				}
			}
		})
	}
}

// ftsTable is an in-memory FTS5 table with the store's tokenizer.
func ftsTable(tb testing.TB) *sql.DB {
	tb.Helper()
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		tb.Fatal(err)
	}
	db.SetMaxOpenConns(1) // every connection would get its own :memory: database
	tb.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE VIRTUAL TABLE t USING fts5 (text, tokenize = 'porter unicode61 remove_diacritics 2')`); err != nil {
		tb.Fatal(err)
	}
	return db
}

// FuzzMatchExpression runs what MatchExpression makes of any text through a
// real FTS5 MATCH: it must never be a syntax error, must be well formed, and
// must find a document made of the plain ASCII words it kept.
func FuzzMatchExpression(f *testing.F) {
	for _, q := range storetest.NastyQueries() {
		f.Add(q.Text)
	}
	f.Add(`login test failures with selector issues`)
	f.Add(`"unterminated`)
	f.Add(`col:(a OR b) AND NOT c*`)
	db := ftsTable(f)
	f.Fuzz(func(t *testing.T, text string) {
		expr := sqlite.MatchExpression(text)
		if expr == "" {
			for _, r := range text {
				if unicode.IsLetter(r) || unicode.IsNumber(r) {
					t.Fatalf("MatchExpression(%q) is empty, but the text has the word character %q", text, r)
				}
			}
			return
		}
		terms := strings.Split(expr, " OR ")
		if len(terms) > 128 {
			t.Fatalf("%d phrases, want at most 128", len(terms))
		}
		var ascii []string
		seen := map[string]bool{}
		for i, term := range terms {
			inner, ok := strings.CutPrefix(term, `"`)
			inner, ok2 := strings.CutSuffix(inner, `"`)
			if !ok || !ok2 || inner == "" || strings.Contains(inner, `"`) {
				t.Fatalf("term %q of %s is not a quoted word", term, expr)
			}
			if seen[inner] && terms[i-1] != term {
				t.Fatalf("term %q repeated apart from its first use in %s", inner, expr)
			}
			if seen[inner] {
				continue
			}
			seen[inner] = true
			if len(seen) > 64 {
				t.Fatalf("more than 64 distinct terms in %s", expr)
			}
			if isASCIIWord(inner) {
				ascii = append(ascii, inner)
			}
		}

		if _, err := db.Exec(`DELETE FROM t`); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`INSERT INTO t (text) VALUES (?)`, strings.Join(ascii, " ")); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM t WHERE t MATCH ?`, expr).Scan(&n); err != nil {
			t.Fatalf("MATCH %s (from %q): %v", expr, text, err)
		}
		if len(ascii) > 0 && n == 0 {
			t.Fatalf("MATCH %s (from %q) did not find a document holding %q", expr, text, ascii)
		}
	})
}

func isASCIIWord(s string) bool {
	for _, r := range s {
		if !('a' <= r && r <= 'z' || '0' <= r && r <= '9') {
			return false
		}
	}
	return true
}
