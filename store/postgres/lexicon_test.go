package postgres

import (
	"bufio"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/h4r/h4r"
)

// lexiconTexts are texts whose words the parser and the english
// configuration treat in every way the cache must get right or leave to
// to_tsvector: stop words, numbers, letters and digits mixed, accents,
// other scripts, combining marks, ligatures, fractions and superscripts,
// a word too long to index, a term met more often than a tsvector keeps
// its positions, and a text longer than the cache counts.
func lexiconTexts() []string {
	texts := []string{
		"The cats were running quickly through the gardens of the houses.",
		"A study of 1,024 patients (p < 0.05) found 3.5-fold risk; covid19 h2o 1e5 0x1f v2 a1b2c3.",
		"Café naïve résumé Zürich Ångström façade coöperate jalapeño São Paulo Øresund",
		"Σωκράτης φιλοσοφία Москва исследование 研究 東京 한국어 עברית العربية हिन्दी",
		"ﬁnal ﬂow ½ ¾ x² H₂O ℃ Ⅻ İstanbul ǅemal e\u0301cole n\u0303o a\u0308b",
		strings.Repeat("z", 3000) + " after a very long word",
		strings.TrimSpace(strings.Repeat("protein ", 300)) + " binding",
		strings.TrimSpace(strings.Repeat("cell division gene ", 2000)),
		"",
		"the of and a an is was",
		"ALL CAPS Words With Mixed CASE and i İ ı I",
		"mitochondrial mitochondria mitochondrion DNA-binding non-coding pre-mRNA",
		"x a²b y the²the h₂o ab½cd the½",
		manyTokens(),
	}
	// Scifact abstracts, where the datasets are (a corpus of ordinary
	// words on top of the cases above).
	if dir := os.Getenv("H4R_DATASETS"); dir != "" {
		if f, err := os.Open(filepath.Join(dir, "scifact", "corpus.jsonl")); err == nil {
			defer f.Close()
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 1<<20), 1<<24)
			for sc.Scan() && len(texts) < 400 {
				var doc struct{ Title, Text string }
				if json.Unmarshal(sc.Bytes(), &doc) == nil {
					texts = append(texts, doc.Title+". "+doc.Text)
				}
			}
		}
	}
	return texts
}

// manyTokens is a text of fewer words than the cache counts whose words
// are five parser tokens each (a stop word four times, then a term), so
// that its positions pass the 16,383 where Postgres clamps them and merges
// a term's repeats there.
func manyTokens() string {
	var sb strings.Builder
	for k := range 4000 {
		sb.WriteString("a²a²a²a²x")
		sb.WriteByte(byte('a' + k%200/26))
		sb.WriteByte(byte('a' + k%200%26))
		sb.WriteByte(' ')
	}
	return sb.String()
}

// The lexemes counted from the word cache are exactly what to_tsvector
// makes of the whole text, cold and warm.
func TestWordCacheCountsAsToTsvector(t *testing.T) {
	s := newStore(t)
	texts := lexiconTexts()
	batch := func() []encodedItem {
		items := make([]encodedItem, len(texts))
		for i, txt := range texts {
			items[i].searchTxt = words(txt, false, 0)
		}
		return items
	}
	want := batch()
	all := make([]int, len(want))
	for i := range all {
		all[i] = i
	}
	if err := s.analyzeWhole(t.Context(), want, all); err != nil {
		t.Fatal(err)
	}
	counts := func(e encodedItem) map[string]int {
		m := map[string]int{}
		for j, term := range e.terms {
			m[term] += e.tfs[j]
		}
		return m
	}
	for _, pass := range []string{"cold", "warm"} {
		got := batch()
		if err := s.analyze(t.Context(), got); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if got[i].docLen != want[i].docLen || !maps.Equal(counts(got[i]), counts(want[i])) {
				t.Errorf("%s, text %d (%.60q): length %d, want %d; terms %v, want %v", pass, i, texts[i],
					got[i].docLen, want[i].docLen, counts(got[i]), counts(want[i]))
			}
			if len(got[i].terms) != len(counts(got[i])) {
				t.Errorf("%s, text %d: a term listed twice: %v", pass, i, got[i].terms)
			}
		}
	}
	s.lexemes.mu.Lock()
	cached := len(s.lexemes.m)
	s.lexemes.mu.Unlock()
	if cached < 50 {
		t.Errorf("the cache holds %d words after two batches, want the texts' ordinary words", cached)
	}
}

// A store whose term id cache is warm finds a terms table emptied and
// refilled under it (other ids for the same terms), runs its write again,
// and writes postings whose term ids are the table's.
func TestTermIDCacheFollowsTheTable(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	if _, err := s.Upsert(ctx, []h4r.Item{{ID: "a", Kind: "note", Text: "alpha beta gamma"}}); err != nil {
		t.Fatal(err)
	}
	// Other ids for the same terms: the old ones are gone, the new ones
	// start past them.
	if _, err := s.writes.Exec(ctx, `TRUNCATE terms`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.writes.Exec(ctx, `INSERT INTO terms (term) VALUES ('gamma'), ('beta'), ('alpha')`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Upsert(ctx, []h4r.Item{{ID: "b", Kind: "note", Text: "alpha beta"}}); err != nil {
		t.Fatal(err)
	}
	var postings, orphans int
	err := s.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE t.id IS NULL)
		FROM postings p JOIN items i ON i.seq = p.item_seq LEFT JOIN terms t ON t.id = p.term_id
		WHERE i.id = 'b'`).Scan(&postings, &orphans)
	if err != nil {
		t.Fatal(err)
	}
	if postings != 2 || orphans != 0 {
		t.Errorf("item b has %d postings, %d of them with a term id the terms table does not hold; want 2 and 0", postings, orphans)
	}
	hits, err := s.pool.Query(ctx, `SELECT i.id FROM postings p JOIN items i ON i.seq = p.item_seq
		JOIN terms t ON t.id = p.term_id WHERE t.term = 'alpha'`)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(hits, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, []string{"b"}) {
		t.Errorf("the postings of the term alpha are of %v, want [b]", ids)
	}
}
