package embed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// topicCorpus returns texts of three topics. Within a topic, half the texts
// say "car" and half "automobile", never both, always beside the topic's
// other words: the two words co-occur with the same neighbours only.
func topicCorpus() []string {
	topics := [][]string{
		{"car", "automobile", "engine", "wheel", "driver", "road", "fuel", "garage"},
		{"doctor", "physician", "patient", "hospital", "nurse", "medicine", "clinic", "surgery"},
		{"ocean", "sea", "wave", "ship", "sailor", "harbour", "tide", "coast"},
	}
	rng := rand.New(rand.NewPCG(7, 7))
	var out []string
	for i := range 300 {
		words := topics[i%3]
		syn := words[(i/3)%2] // car or automobile, doctor or physician, ocean or sea
		text := syn
		for range 6 {
			text += " " + words[2+rng.IntN(len(words)-2)]
		}
		out = append(out, text)
	}
	return out
}

func sliceCorpus(texts []string) Corpus {
	return func(ctx context.Context, fn func(string) error) error {
		for _, t := range texts {
			if err := fn(t); err != nil {
				return err
			}
		}
		return nil
	}
}

func learnTiny(t *testing.T) *LearnedModel {
	t.Helper()
	texts := topicCorpus()
	m, err := Learn(context.Background(), sliceCorpus(texts), len(texts), WithLearnedDim(3))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestLearnedSynonymsEndUpClose(t *testing.T) {
	e := NewLearned(learnTiny(t), 3)
	vecs, err := e.Embed(context.Background(), []string{"car", "automobile", "physician", "doctor", "sea", "ocean"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		a, b, far int
	}{
		{"car and automobile", 0, 1, 2},
		{"doctor and physician", 3, 2, 4},
		{"sea and ocean", 4, 5, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			near, far := Cosine(vecs[tt.a], vecs[tt.b]), Cosine(vecs[tt.a], vecs[tt.far])
			// They never share a text, so a lexical embedder scores them 0.
			if near < 0.8 || far > 0.3 {
				t.Errorf("cosine of the synonyms %.3f (want >= 0.8), of words of another topic %.3f (want <= 0.3)", near, far)
			}
		})
	}
}

func TestLearnedSmallCorpusLearnsNothing(t *testing.T) {
	texts := topicCorpus()[:10]
	_, err := Learn(context.Background(), sliceCorpus(texts), len(texts))
	if !errors.Is(err, ErrNotLearned) {
		t.Fatalf("learning from 10 texts: got %v, want ErrNotLearned", err)
	}
	if _, err := NewLearned(nil, 3).Embed(context.Background(), []string{"x"}); !errors.Is(err, ErrNotLearned) {
		t.Fatalf("embedding without a model: got %v, want ErrNotLearned", err)
	}
}

// roundTrip encodes m and decodes it again.
func roundTrip(t *testing.T, m *LearnedModel) *LearnedModel {
	t.Helper()
	var buf bytes.Buffer
	if err := m.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := Decode(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return back
}

func TestLearnedEncodeRoundTrip(t *testing.T) {
	m := learnTiny(t)
	back := roundTrip(t, m)
	if back.Name() != m.Name() || back.Dim() != m.Dim() || back.Vocabulary() != m.Vocabulary() || back.Docs() != m.Docs() {
		t.Fatalf("decoded %s dim %d vocab %d docs %d, encoded %s dim %d vocab %d docs %d",
			back.Name(), back.Dim(), back.Vocabulary(), back.Docs(), m.Name(), m.Dim(), m.Vocabulary(), m.Docs())
	}
	a, _ := NewLearned(m, m.Dim()).Embed(context.Background(), []string{"engine wheel"})
	b, _ := NewLearned(back, back.Dim()).Embed(context.Background(), []string{"engine wheel"})
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatal("the decoded model embeds differently")
	}
}

func TestLearnedDeterministic(t *testing.T) {
	if a, b := learnTiny(t), learnTiny(t); a.Name() != b.Name() {
		t.Fatalf("one corpus, one seed, two models: %s and %s", a.Name(), b.Name())
	}
}

func FuzzDecodeLearned(f *testing.F) {
	var buf bytes.Buffer
	texts := topicCorpus()
	m, err := Learn(context.Background(), sliceCorpus(texts), len(texts), WithLearnedDim(4))
	if err != nil {
		f.Fatal(err)
	}
	if err := m.Encode(&buf); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte(learnedMagic))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Decode(data)
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := m.Encode(&out); err != nil {
			t.Fatal(err)
		}
		back, err := Decode(out.Bytes())
		if err != nil || back.Name() != m.Name() {
			t.Fatalf("a decoded model does not survive encoding: %v", err)
		}
		if _, err := NewLearned(m, m.Dim()).Embed(context.Background(), []string{"any text at all"}); err != nil {
			t.Fatal(err)
		}
	})
}

// BenchmarkEmbedQuery embeds a three-word query with the learned embedder
// (128 dimensions, a model learned from the topic corpus) and with the
// hashing embedder it replaces as the default (512 dimensions).
func BenchmarkEmbedQuery(b *testing.B) {
	texts := topicCorpus()
	m, err := Learn(context.Background(), sliceCorpus(texts), len(texts), WithLearnedDim(128))
	if err != nil {
		b.Fatal(err)
	}
	h, err := NewHash()
	if err != nil {
		b.Fatal(err)
	}
	query := []string{"engine wheel automobile"}
	for _, e := range []Embedder{NewLearned(m, m.Dim()), h} {
		b.Run(e.Model(), func(b *testing.B) {
			for b.Loop() {
				if _, err := e.Embed(context.Background(), query); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestLearnedDocsCountsTheWholeCorpus: above the training cap only every
// n-th text is read, but Docs is the size of the whole corpus, and stays
// so through Encode and Decode: the drift check compares the corpus with
// it, and a sample's size would make a model loaded over a large corpus
// look outgrown at every start, and be learned again.
func TestLearnedDocsCountsTheWholeCorpus(t *testing.T) {
	texts := topicCorpus()
	for _, tc := range []struct {
		name string
		cap  int
	}{
		{"under the cap", 1000},
		{"every third text read", 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Learn(context.Background(), sliceCorpus(texts), len(texts), WithLearnedDim(3), func(c *learnConfig) { c.maxDocs = tc.cap })
			if err != nil {
				t.Fatal(err)
			}
			if back := roundTrip(t, m); m.Docs() != len(texts) || back.Docs() != len(texts) {
				t.Errorf("Docs = %d, decoded %d; want the corpus's %d texts", m.Docs(), back.Docs(), len(texts))
			}
		})
	}
}
