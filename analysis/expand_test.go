package analysis_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/h4r/h4r/analysis"
)

func TestExpand(t *testing.T) {
	two := analysis.Expansion{Docs: 2, Terms: 2, OriginalWeight: 0.5}
	plural := func(w string) string { return strings.TrimSuffix(w, "s") }
	tests := []struct {
		name  string
		query string
		docs  []analysis.FeedbackDoc
		p     analysis.Expansion
		key   func(string) string
		// background, with p.Contrast: the whole first pass
		background []analysis.FeedbackDoc
		want       []analysis.Term
	}{
		{
			// P(d1|q) = 2/3, P(d2|q) = 1/3; P(dog|R) = 8/18, P(cat|R) =
			// 7/18, P(fish|R) = 3/18, so fish is cut; cat = 0.5 + 0.5·7/15,
			// dog = 0.5·8/15, in 128 occurrences: 93.9 and 34.1.
			name: "relevance model by hand", query: "cat",
			docs: []analysis.FeedbackDoc{{Text: "cat dog dog", Score: 2}, {Text: "cat fish", Score: 1}},
			p:    two, want: []analysis.Term{{Word: "cat", Count: 94}, {Word: "dog", Count: 34}},
		},
		{
			name: "no documents", query: "cat",
			p: two, want: []analysis.Term{{Word: "cat", Count: 1}},
		},
		{
			name: "the original weight 1 is not an expansion", query: "cat cat",
			docs: []analysis.FeedbackDoc{{Text: "dog", Score: 1}, {Text: "dog", Score: 1}},
			p:    analysis.Expansion{Docs: 2, Terms: 2, OriginalWeight: 1}, want: []analysis.Term{{Word: "cat", Count: 2}},
		},
		{
			name: "stop words and one-letter words are never added", query: "cat",
			docs: []analysis.FeedbackDoc{{Text: "the the the x x x cat", Score: 1}, {Text: "the a of cat", Score: 1}},
			p:    two, want: []analysis.Term{{Word: "cat", Count: 128}},
		},
		{
			name: "zero scores weigh documents alike", query: "cat",
			docs: []analysis.FeedbackDoc{{Text: "dog", Score: 0}, {Text: "fish", Score: 0}},
			p:    two, want: []analysis.Term{{Word: "cat", Count: 64}, {Word: "dog", Count: 32}, {Word: "fish", Count: 32}},
		},
		{
			name: "a key groups forms, written as the most frequent", query: "cats",
			docs: []analysis.FeedbackDoc{{Text: "dog dogs dogs cat", Score: 1}, {Text: "dogs", Score: 1}},
			p:    analysis.Expansion{Docs: 2, Terms: 1, OriginalWeight: 0.5}, key: plural,
			want: []analysis.Term{{Word: "cats", Count: 64}, {Word: "dogs", Count: 64}},
		},
		{
			// P(w|R): cat and dog 1/2; P(w|B): cat 1/2, dog 1/4. cat holds
			// no more of the top than of the list and is not added; dog
			// is the whole model.
			name: "contrast drops words the whole list holds", query: "cat",
			docs:       []analysis.FeedbackDoc{{Text: "cat dog", Score: 1}, {Text: "cat dog", Score: 1}},
			background: []analysis.FeedbackDoc{{Text: "cat dog", Score: 1}, {Text: "cat dog", Score: 1}, {Text: "cat fish", Score: 1}, {Text: "cat fish", Score: 1}},
			p:          analysis.Expansion{Docs: 2, Terms: 2, OriginalWeight: 0.5, Contrast: true},
			want:       []analysis.Term{{Word: "cat", Count: 64}, {Word: "dog", Count: 64}},
		},
		{
			name: "without contrast the same documents add cat's weight", query: "cat",
			docs: []analysis.FeedbackDoc{{Text: "cat dog", Score: 1}, {Text: "cat dog", Score: 1}},
			p:    two, want: []analysis.Term{{Word: "cat", Count: 96}, {Word: "dog", Count: 32}},
		},
		{
			name: "an added word the query holds adds to its weight", query: "cat dog",
			docs: []analysis.FeedbackDoc{{Text: "dog", Score: 1}, {Text: "dog", Score: 1}},
			p:    two, want: []analysis.Term{{Word: "cat", Count: 32}, {Word: "dog", Count: 96}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := analysis.Default().Expand(tt.query, tt.docs, tt.background, tt.p, tt.key)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Expand = %v, want %v", got, tt.want)
			}
		})
	}
}

// The expanded query must travel as text: read back by Terms, it is the
// same terms, within the caps.
func TestExpandFitsTheCaps(t *testing.T) {
	var q, d []string
	for i := range 80 {
		q = append(q, "q"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+string(rune('a'+i/26)))
		d = append(d, "d"+string(rune('a'+i%26))+string(rune('a'+i/26)))
	}
	docs := make([]analysis.FeedbackDoc, 10)
	for i := range docs {
		docs[i] = analysis.FeedbackDoc{Text: strings.Join(d[i*5:], " "), Score: float64(10 - i)}
	}
	for _, query := range []string{strings.Join(q, " "), strings.Join(q[:3], " ")} {
		terms := analysis.Default().Expand(query, docs, docs, analysis.Expansion{Docs: 10, Terms: 40, OriginalWeight: 0.3, Contrast: true}, nil)
		checkExpanded(t, query, terms)
	}
}

func checkExpanded(t *testing.T, query string, terms []analysis.Term) {
	t.Helper()
	sum := 0
	for _, tm := range terms {
		if tm.Count < 1 {
			t.Fatalf("term %v has no count", tm)
		}
		sum += tm.Count
	}
	if len(terms) > analysis.MaxTerms || sum > analysis.MaxOccurrences {
		t.Fatalf("%d terms, %d occurrences: over the caps %d and %d", len(terms), sum, analysis.MaxTerms, analysis.MaxOccurrences)
	}
	if back := analysis.Default().Terms(analysis.QueryText(terms)); !slices.Equal(back, terms) {
		t.Fatalf("Terms(QueryText(x)) = %v, want x = %v", back, terms)
	}
	orig := analysis.Default().Terms(query)
	for _, o := range orig {
		if !slices.ContainsFunc(terms, func(tm analysis.Term) bool { return tm.Word == o.Word }) {
			t.Fatalf("original word %q was dropped from %v", o.Word, terms)
		}
	}
}

func TestSameTerms(t *testing.T) {
	a := []analysis.Term{{Word: "x", Count: 1}, {Word: "y", Count: 2}}
	tests := []struct {
		name string
		b    []analysis.Term
		want bool
	}{
		{"a multiple", []analysis.Term{{Word: "x", Count: 3}, {Word: "y", Count: 6}}, true},
		{"other ratios", []analysis.Term{{Word: "x", Count: 3}, {Word: "y", Count: 5}}, false},
		{"another word", []analysis.Term{{Word: "x", Count: 1}, {Word: "z", Count: 2}}, false},
		{"fewer words", []analysis.Term{{Word: "x", Count: 1}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := analysis.SameTerms(a, tt.b); got != tt.want {
				t.Errorf("SameTerms = %v, want %v", got, tt.want)
			}
		})
	}
}

func FuzzExpand(f *testing.F) {
	f.Add("cat dog", "cat dog dog", "fish cat", 2.0, 1.0)
	f.Add("a the", "x", "", 0.0, -1.0)
	f.Fuzz(func(t *testing.T, query, d1, d2 string, s1, s2 float64) {
		docs := []analysis.FeedbackDoc{{Text: d1, Score: s1}, {Text: d2, Score: s2}}
		terms := analysis.Default().Expand(query, docs, docs, analysis.Expansion{Docs: 2, Terms: 20, OriginalWeight: 0.5, Contrast: true}, nil)
		checkExpanded(t, query, terms)
	})
}
