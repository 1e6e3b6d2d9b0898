package pack

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/h4r/h4r"
)

func TestTLDR(t *testing.T) {
	tests := []struct {
		name    string
		query   string
		entries []Entry
		builder []Option
		n       *int
		want    []h4r.Sentence // scores are checked when non-zero
		cites   []string
		text    string // checked when not empty
	}{
		{
			name:  "a rare query term outweighs a common one",
			query: "selector login",
			entries: []Entry{
				kept("a", "The build was green. A timeout hit the login page."),
				kept("b", "The selector changed. The selector and the timeout both matter."),
			},
			n: intPtr(3),
			// Four sentences: login is in one (idf ln 5), selector in two (idf ln 3).
			want: []h4r.Sentence{
				{Text: "A timeout hit the login page.", ItemID: "a", Score: 1.6094},
				{Text: "The selector changed.", ItemID: "b", Score: 1.0986},
				{Text: "The selector and the timeout both matter.", ItemID: "b", Score: 1.0986},
			},
			cites: []string{"a", "b"},
			text:  "A timeout hit the login page. The selector changed. The selector and the timeout both matter.",
		},
		{
			name:  "more query terms score higher",
			query: "selector timeout",
			entries: []Entry{
				kept("a", "The build was green. A timeout hit the login page."),
				kept("b", "The selector changed. The selector and the timeout both matter."),
			},
			n: intPtr(1),
			want: []h4r.Sentence{
				{Text: "The selector and the timeout both matter.", ItemID: "b", Score: 2 * math.Round(math.Log(3)*1e4) / 1e4},
			},
			cites: []string{"b"},
		},
		{
			name:  "plurals match their singular, stopwords and case aside",
			query: "The Query",
			entries: []Entry{
				kept("a", "The build was green. Two Queries timed out."),
			},
			n:     intPtr(2),
			want:  []h4r.Sentence{{Text: "Two Queries timed out.", ItemID: "a"}},
			cites: []string{"a"},
		},
		{
			name:  "equal scores go to the higher-ranked item",
			query: "deploy",
			entries: []Entry{
				kept("first", "Deploy 12 went out"),
				kept("second", "Deploy 13 went out"),
			},
			n:     intPtr(2),
			want:  []h4r.Sentence{{Text: "Deploy 12 went out", ItemID: "first"}, {Text: "Deploy 13 went out", ItemID: "second"}},
			cites: []string{"first", "second"},
			text:  "Deploy 12 went out. Deploy 13 went out.",
		},
		{
			name:  "a dropped item never appears, even when it matches best",
			query: "login test failures with selector issues",
			entries: []Entry{
				dropped("secret", "Login test failures with selector issues: password hunter2."),
				kept("weak", "The login page is slow. Nothing else happened."),
			},
			want:  []h4r.Sentence{{Text: "The login page is slow.", ItemID: "weak"}},
			cites: []string{"weak"},
		},
		{
			name:  "a dropped item with a delivered form still never appears",
			query: "outage",
			entries: []Entry{
				func() Entry {
					e := kept("secret", "The outage was caused by hunter2.")
					e.Reason = h4r.ReasonBudgetBytes
					return e
				}(),
				kept("other", "An outage report is pending."),
			},
			want:  []h4r.Sentence{{Text: "An outage report is pending.", ItemID: "other"}},
			cites: []string{"other"},
		},
		{
			name:    "sentences holding the redaction marker are skipped",
			query:   "access selector",
			entries: []Entry{kept("a", "Ask [REDACTED] for access. The selector broke.")},
			want:    []h4r.Sentence{{Text: "The selector broke.", ItemID: "a"}},
			cites:   []string{"a"},
		},
		{
			name:  "no shared term: the lead sentence of the top items",
			query: "kubernetes",
			entries: []Entry{
				kept("a", "First of a. Second of a."),
				dropped("x", "First of x."),
				kept("b", "[REDACTED] said so. First usable of b. Second of b."),
				kept("c", "First of c."),
			},
			n: intPtr(2),
			want: []h4r.Sentence{
				{Text: "First of a.", ItemID: "a", Score: 0},
				{Text: "First usable of b.", ItemID: "b", Score: 0},
			},
			cites: []string{"a", "b"},
		},
		{
			name:    "stopwords alone share nothing",
			query:   "the of and",
			entries: []Entry{kept("a", "The end of the line. And more.")},
			want:    []h4r.Sentence{{Text: "The end of the line.", ItemID: "a"}},
			cites:   []string{"a"},
		},
		{
			name:    "plurals and case are normalised",
			query:   "FAILURES Queries",
			entries: []Entry{kept("a", "Nothing here. One failure in the query planner.")},
			want:    []h4r.Sentence{{Text: "One failure in the query planner.", ItemID: "a"}},
			cites:   []string{"a"},
		},
		{
			name:  "identical sentences appear once, cited to the higher-ranked item",
			query: "login failed",
			entries: []Entry{
				kept("a", "Login failed."),
				kept("b", "Login failed. Login failed again later."),
			},
			want: []h4r.Sentence{
				{Text: "Login failed.", ItemID: "a"},
				{Text: "Login failed again later.", ItemID: "b"},
			},
			cites: []string{"a", "b"},
		},
		{
			name:    "the builder's length applies without an override",
			query:   "x",
			entries: []Entry{kept("a", "x one. x two. x three.")},
			builder: []Option{WithTLDRSentences(2)},
			want:    []h4r.Sentence{{Text: "x one.", ItemID: "a"}, {Text: "x two.", ItemID: "a"}},
			cites:   []string{"a"},
		},
		{
			name:    "the request's override wins",
			query:   "x",
			entries: []Entry{kept("a", "x one. x two. x three.")},
			builder: []Option{WithTLDRSentences(2)},
			n:       intPtr(1),
			want:    []h4r.Sentence{{Text: "x one.", ItemID: "a"}},
			cites:   []string{"a"},
		},
		{
			name:    "zero sentences leaves the TL;DR empty",
			query:   "x",
			entries: []Entry{kept("a", "x one.")},
			n:       intPtr(0),
			want:    []h4r.Sentence{},
			cites:   []string{},
		},
		{
			name:    "nothing kept gives an empty TL;DR",
			query:   "x",
			entries: []Entry{dropped("a", "x one.")},
			want:    []h4r.Sentence{},
			cites:   []string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBuilder(append([]Option{WithClock(fixedClock)}, tt.builder...)...)
			p := b.Build(Input{Query: tt.query, Entries: tt.entries, TLDRSentences: tt.n})
			got := p.Explainability.TLDR
			if len(got.Sentences) != len(tt.want) {
				t.Fatalf("sentences = %+v, want %+v", got.Sentences, tt.want)
			}
			for i, w := range tt.want {
				g := got.Sentences[i]
				if g.Text != w.Text || g.ItemID != w.ItemID || (w.Score != 0 && math.Abs(g.Score-w.Score) > 1e-4) {
					t.Errorf("sentence %d = %+v, want %+v", i, g, w)
				}
			}
			if !reflect.DeepEqual(got.Citations, tt.cites) {
				t.Errorf("citations = %q, want %q", got.Citations, tt.cites)
			}
			if tt.text != "" && got.Text != tt.text {
				t.Errorf("text = %q, want %q", got.Text, tt.text)
			}
			if p.AgentSlice.Summary != got.Text {
				t.Errorf("agent slice summary %q differs from the TL;DR %q", p.AgentSlice.Summary, got.Text)
			}
		})
	}
}

// TestDroppedTextLeaksNowhere checks the whole marshalled pack, not just
// the TL;DR: a dropped item's words appear nowhere in it.
func TestDroppedTextLeaksNowhere(t *testing.T) {
	secret := dropped("mem-secret", "Login outage: the selector password is hunter2zebra.")
	secret.Ranked.Candidate.Item.Content = map[string]any{"selector": "#hunter2zebra", "test": "hunter2zebra-spec"}
	secret.Ranked.Candidate.Item.Metadata.Tags = []string{"selector", "flaky"}
	ins := []Input{
		{Query: "login outage selector password", Entries: []Entry{secret, kept("ok", "The login page loads.")}},
		{Query: "login outage selector password", Entries: []Entry{secret}},
	}
	for i, in := range ins {
		p := NewBuilder(WithClock(fixedClock)).Build(in)
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "hunter2zebra") {
			t.Errorf("input %d: the dropped item's text reached the pack: %s", i, b)
		}
		for _, a := range p.Explainability.Affordances {
			if slices.Contains(a.Evidence, "mem-secret") {
				t.Errorf("input %d: affordance %s was triggered by the dropped item", i, a.Type)
			}
		}
	}
}

func TestSplitSentences(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []string
	}{
		{name: "full stops", text: "One. Two. Three.", want: []string{"One.", "Two.", "Three."}},
		{name: "no final punctuation", text: "One. Two", want: []string{"One.", "Two"}},
		{name: "decimal and version numbers stay whole", text: "Version 3.2 shipped at 0.5x speed. Done!", want: []string{"Version 3.2 shipped at 0.5x speed.", "Done!"}},
		{name: "question and exclamation marks", text: "Why? Because! Fine.", want: []string{"Why?", "Because!", "Fine."}},
		{name: "line breaks", text: "line one\nline two\r\n\nline three", want: []string{"line one", "line two", "line three"}},
		{name: "punctuation only is no sentence", text: "... !? -", want: nil},
		{name: "selectors and ids keep their dots", text: "element .login-form.active not found", want: []string{"element .login-form.active not found"}},
		{name: "empty", text: "", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := splitSentences(tt.text); !slices.Equal(got, tt.want) {
				t.Errorf("splitSentences(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

func TestTerms(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{name: "lower case, stopwords out", text: "The Login of THE page", want: []string{"login", "page"}},
		{name: "plurals", text: "issues queries tests status class", want: []string{"issue", "query", "test", "status", "class"}},
		{name: "punctuation splits", text: "#login-button failed: spec-001", want: []string{"login", "button", "failed", "spec", "001"}},
		{name: "distinct", text: "test tests TEST", want: []string{"test"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := terms(tt.text); !slices.Equal(got, tt.want) {
				t.Errorf("terms(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

// FuzzSummarize feeds arbitrary queries and item texts (both outside
// input) to the TL;DR: every sentence must come from a kept item's text,
// never hold the redaction marker, and cite only kept items.
func FuzzSummarize(f *testing.F) {
	f.Add("login failures", "Login failed. Retry passed.", "Secret login failure.")
	f.Add("", "", "")
	f.Add("x", "[REDACTED] x. x y.", "x")
	f.Add("ünï", "Ünï cödé!\nsecond line?", "ünï")
	f.Fuzz(func(t *testing.T, query, keptText, droppedText string) {
		p := NewBuilder(WithClock(fixedClock)).Build(Input{
			Query:   query,
			Entries: []Entry{dropped("d", droppedText), kept("k", keptText)},
		})
		tldr := p.Explainability.TLDR
		for _, s := range tldr.Sentences {
			if s.ItemID != "k" || !strings.Contains(keptText, s.Text) {
				t.Fatalf("sentence %q (item %s) is not from the kept text %q", s.Text, s.ItemID, keptText)
			}
			if strings.Contains(s.Text, h4r.RedactionMarker) {
				t.Fatalf("sentence %q holds the redaction marker", s.Text)
			}
		}
		if len(tldr.Citations) > 1 || (len(tldr.Citations) == 1 && tldr.Citations[0] != "k") {
			t.Fatalf("citations %q name more than the kept item", tldr.Citations)
		}
	})
}
