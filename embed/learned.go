package embed

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"sync/atomic"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/analysis"
	"github.com/h4r/h4r/index/bm25"
)

// Defaults of the learned embedder, chosen by cross-validation across the
// public sets (bench/results: quality-embedder).
const (
	DefaultLearnedDim = 128
	// DefaultLearnMinDocs is the corpus size under which nothing is learned:
	// a few dozen texts give term associations that are noise.
	DefaultLearnMinDocs = 50
	// defaultMaxVocab caps the vocabulary by document frequency: rarer
	// terms carry little association evidence and the model's memory is
	// vocabulary × dimension × 4 bytes.
	defaultMaxVocab = 50000
	// defaultMaxTrainDocs caps the documents one learning pass reads; a
	// larger corpus is sampled evenly.
	defaultMaxTrainDocs = 60000
	lsaOversample       = 12
	lsaPasses           = 3
	learnedModelPrefix  = "lsa"
	learnedMagic        = "H4RLSA1\n"
	maxLearnedDim       = 1024
)

// ErrNotLearned is what Learned.Embed returns before a model was learned
// or loaded: the corpus was too small, or nothing was learned yet.
var ErrNotLearned = errors.New("the learned embedder has no model yet (too few items, or h4r reindex not run)")

// LearnedModel is what the learned embedder learned from a corpus: a
// vector per vocabulary term (its coordinates on the leading singular
// vectors of the corpus's tf-idf term–document matrix: latent semantic
// analysis) and the term's idf. Terms that occur in the same documents, or
// in documents that share other terms, get close vectors, so that a query
// and a text that use different words for one topic can meet. It is
// immutable once built, but for its memory of stems, which changes no
// vector.
type LearnedModel struct {
	name  string
	dim   int
	docs  int // texts of the corpus it was learned over (Docs)
	terms map[string]int32
	idf   []float32
	vecs  []float32 // len(terms) × dim, row-major
	// stems remembers the stems of the first words it embeds: those of
	// the corpus when it is embedded again with a new model, then of the
	// texts it embeds after. A pack embeds its query and feedback texts,
	// whose words are mostly the corpus's frequent ones.
	stems *bm25.Stems
}

// learnedStems bounds the stems a model remembers: about 2.5 MB for
// ordinary words, at most about 6 MB (bm25.Stems keeps no word over 64
// bytes).
const learnedStems = 1 << 15

// Name is the model's name: its dimension and a digest of its content, so
// that vectors of two learnings never mix.
func (m *LearnedModel) Name() string { return m.name }

// Dim is the dimension of its vectors.
func (m *LearnedModel) Dim() int { return m.dim }

// Docs is the number of texts of the corpus it was learned over, all of
// them, though above the training cap only every n-th was read: how large
// the corpus was, which the drift check compares the corpus with.
func (m *LearnedModel) Docs() int { return m.docs }

// Vocabulary is the number of terms it knows.
func (m *LearnedModel) Vocabulary() int { return len(m.idf) }

// LearnOption configures Learn.
type LearnOption func(*learnConfig)

type learnConfig struct {
	dim, minDocs, maxVocab, maxDocs int
	seed                            uint64
}

// WithLearnedDim sets the dimension of the model (default DefaultLearnedDim).
func WithLearnedDim(n int) LearnOption { return func(c *learnConfig) { c.dim = n } }

// WithLearnMinDocs sets the corpus size under which Learn learns nothing
// (default DefaultLearnMinDocs).
func WithLearnMinDocs(n int) LearnOption { return func(c *learnConfig) { c.minDocs = n } }

// WithLearnSeed sets the seed of the randomised decomposition (default 1):
// one corpus and one seed give one model.
func WithLearnSeed(s uint64) LearnOption { return func(c *learnConfig) { c.seed = s } }

// Corpus yields the texts to learn from; Learn calls it twice (counting
// document frequencies, then building the matrix) and expects the same
// texts both times.
type Corpus func(ctx context.Context, fn func(text string) error) error

// Learn learns a model from the texts of corpus. total is how many texts
// it yields (0 if unknown): above the training cap, every n-th is used. It
// returns ErrNotLearned when the corpus has fewer than the minimum texts or
// terms shared by two of them.
func Learn(ctx context.Context, corpus Corpus, total int, opts ...LearnOption) (*LearnedModel, error) {
	c := learnConfig{dim: DefaultLearnedDim, minDocs: DefaultLearnMinDocs, maxVocab: defaultMaxVocab, maxDocs: defaultMaxTrainDocs, seed: 1}
	for _, o := range opts {
		o(&c)
	}
	if c.dim < 2 || c.dim > maxLearnedDim {
		return nil, h4r.Errorf(h4r.EINVALID, "dim", "dimension of the learned embedder must be between 2 and %d, got %d", maxLearnedDim, c.dim)
	}
	stride := 1
	if total > c.maxDocs {
		stride = (total + c.maxDocs - 1) / c.maxDocs
	}
	stop := stopTerms()
	corpusTexts := 0 // every text the corpus yields, read or not
	sampled := func(fn func(terms map[string]int) error) error {
		i := 0
		var buf []string
		defer func() { corpusTexts = i }()
		return corpus(ctx, func(text string) error {
			i++
			if (i-1)%stride != 0 {
				return nil
			}
			buf = bm25.Analyze(buf[:0], text)
			tf := make(map[string]int, len(buf))
			for _, t := range buf {
				if !stop[t] && len(t) > 1 {
					tf[t]++
				}
			}
			return fn(tf)
		})
	}
	df := map[string]int{}
	n := 0
	if err := sampled(func(tf map[string]int) error {
		n++
		for t := range tf {
			df[t]++
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("learning the embedder: reading the corpus: %w", err)
	}
	if n < c.minDocs {
		return nil, ErrNotLearned
	}
	// The vocabulary: terms in at least two documents and at most half of
	// them (those carry no topic), the commonest first, capped.
	vocab := make([]string, 0, len(df))
	for t, f := range df {
		if f >= 2 && f <= n/2 {
			vocab = append(vocab, t)
		}
	}
	sort.Slice(vocab, func(i, j int) bool {
		if df[vocab[i]] != df[vocab[j]] {
			return df[vocab[i]] > df[vocab[j]]
		}
		return vocab[i] < vocab[j]
	})
	if len(vocab) > c.maxVocab {
		vocab = vocab[:c.maxVocab]
	}
	if len(vocab) < 2 {
		return nil, ErrNotLearned
	}
	terms := make(map[string]int32, len(vocab))
	idf := make([]float32, len(vocab))
	for i, t := range vocab {
		terms[t] = int32(i)
		idf[i] = float32(math.Log(float64(n+1) / float64(df[t])))
	}
	docs := make([]termDoc, 0, n)
	if err := sampled(func(tf map[string]int) error {
		var d termDoc
		var sum float64
		for t, f := range tf {
			if i, ok := terms[t]; ok {
				w := termWeight(f, idf[i])
				d.terms = append(d.terms, i)
				d.w = append(d.w, w)
				sum += w * w
			}
		}
		if sum == 0 {
			return nil
		}
		inv := 1 / math.Sqrt(sum)
		for i := range d.w {
			d.w[i] *= inv
		}
		docs = append(docs, d)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("learning the embedder: reading the corpus: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("learning the embedder: %w", err)
	}
	u, _, k := lsa(docs, len(vocab), c.dim, lsaOversample, lsaPasses, c.seed)
	if k < 2 {
		return nil, ErrNotLearned
	}
	// A corpus of fewer terms or texts than dimensions has fewer latent
	// dimensions: the rest stay zero, so that the dimension is the one
	// configured (a vector index may be sized by it before learning).
	m := &LearnedModel{dim: c.dim, docs: corpusTexts, terms: terms, idf: idf, vecs: make([]float32, len(vocab)*c.dim), stems: bm25.NewStems(learnedStems)}
	for t := range vocab {
		for j := range k {
			m.vecs[t*c.dim+j] = float32(u[t*k+j])
		}
	}
	m.name = m.digestName()
	return m, nil
}

// termWeight is a term's weight in a text: sublinear term frequency times
// idf, as in the matrix the model was learned from.
func termWeight(tf int, idf float32) float64 {
	return (1 + math.Log(float64(tf))) * float64(idf)
}

// stopTerms returns the stemmed English stop list: those words say
// nothing about a topic and would otherwise tie every text together.
func stopTerms() map[string]bool {
	out := map[string]bool{}
	for _, w := range analysis.English() {
		for _, t := range bm25.Analyze(nil, w) {
			out[t] = true
		}
	}
	return out
}

// embed returns the unit vector of text: the idf-weighted sum of its known
// terms' vectors, or a zero vector when it has none.
func (m *LearnedModel) embed(text string, buf []string) ([]float32, []string) {
	buf = m.stems.Analyze(buf[:0], text)
	tf := make(map[int32]int, len(buf))
	for _, t := range buf {
		if i, ok := m.terms[t]; ok {
			tf[i]++
		}
	}
	acc := make([]float64, m.dim)
	for i, f := range tf {
		w := termWeight(f, m.idf[i])
		row := m.vecs[int(i)*m.dim : int(i)*m.dim+m.dim]
		for j, x := range row {
			acc[j] += w * float64(x)
		}
	}
	out := make([]float32, m.dim)
	var sum float64
	for _, x := range acc {
		sum += x * x
	}
	if sum > 0 {
		inv := 1 / math.Sqrt(sum)
		for j, x := range acc {
			out[j] = float32(x * inv)
		}
	}
	return out, buf
}

// Encode writes the model in its binary form, which Decode reads.
func (m *LearnedModel) Encode(w io.Writer) error {
	bw := bufio.NewWriter(w)
	bw.WriteString(learnedMagic)
	var hdr [12]byte
	binary.LittleEndian.PutUint32(hdr[0:], uint32(m.dim))
	binary.LittleEndian.PutUint32(hdr[4:], uint32(m.docs))
	binary.LittleEndian.PutUint32(hdr[8:], uint32(len(m.idf)))
	bw.Write(hdr[:])
	words := make([]string, len(m.idf))
	for t, i := range m.terms {
		words[i] = t
	}
	var num [4]byte
	var lenBuf [binary.MaxVarintLen64]byte
	for i, t := range words {
		bw.Write(lenBuf[:binary.PutUvarint(lenBuf[:], uint64(len(t)))])
		bw.WriteString(t)
		binary.LittleEndian.PutUint32(num[:], math.Float32bits(m.idf[i]))
		bw.Write(num[:])
		for _, x := range m.vecs[i*m.dim : i*m.dim+m.dim] {
			binary.LittleEndian.PutUint32(num[:], math.Float32bits(x))
			bw.Write(num[:])
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing the learned model: %w", err)
	}
	return nil
}

// maxDecodedTerms bounds what Decode accepts, so that a corrupt header
// cannot make it allocate without limit.
const maxDecodedTerms = 1 << 22

// Decode reads a model written by Encode. Anything else is an error,
// never a panic.
func Decode(data []byte) (*LearnedModel, error) {
	if !bytes.HasPrefix(data, []byte(learnedMagic)) {
		return nil, errors.New("decoding the learned model: not a learned model (bad magic)")
	}
	r := bytes.NewReader(data[len(learnedMagic):])
	var hdr [12]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, fmt.Errorf("decoding the learned model: header: %w", err)
	}
	dim := int(binary.LittleEndian.Uint32(hdr[0:]))
	docs := int(binary.LittleEndian.Uint32(hdr[4:]))
	n := int(binary.LittleEndian.Uint32(hdr[8:]))
	if dim < 2 || dim > maxLearnedDim || n < 1 || n > maxDecodedTerms {
		return nil, fmt.Errorf("decoding the learned model: bad header (dimension %d, %d terms)", dim, n)
	}
	// Each term takes at least 1 + 4 + 4×dim bytes: check before allocating.
	if int64(r.Len()) < int64(n)*int64(5+4*dim) {
		return nil, fmt.Errorf("decoding the learned model: %d bytes cannot hold %d terms of dimension %d", r.Len(), n, dim)
	}
	m := &LearnedModel{dim: dim, docs: docs, terms: make(map[string]int32, n), idf: make([]float32, n), vecs: make([]float32, n*dim), stems: bm25.NewStems(learnedStems)}
	var num [4]byte
	for i := range n {
		l, err := binary.ReadUvarint(r)
		if err != nil || l == 0 || l > 1024 || int64(l) > int64(r.Len()) {
			return nil, fmt.Errorf("decoding the learned model: term %d: bad length", i)
		}
		word := make([]byte, l)
		if _, err := io.ReadFull(r, word); err != nil {
			return nil, fmt.Errorf("decoding the learned model: term %d: %w", i, err)
		}
		if _, dup := m.terms[string(word)]; dup {
			return nil, fmt.Errorf("decoding the learned model: term %q twice", word)
		}
		m.terms[string(word)] = int32(i)
		if _, err := io.ReadFull(r, num[:]); err != nil {
			return nil, fmt.Errorf("decoding the learned model: term %d: %w", i, err)
		}
		m.idf[i] = math.Float32frombits(binary.LittleEndian.Uint32(num[:]))
		for j := range dim {
			if _, err := io.ReadFull(r, num[:]); err != nil {
				return nil, fmt.Errorf("decoding the learned model: term %d: %w", i, err)
			}
			m.vecs[i*dim+j] = math.Float32frombits(binary.LittleEndian.Uint32(num[:]))
		}
		if !finite32(m.idf[i]) || m.idf[i] < 0 || !allFinite(m.vecs[i*dim:i*dim+dim]) {
			return nil, fmt.Errorf("decoding the learned model: term %d: not a finite number", i)
		}
	}
	if r.Len() != 0 {
		return nil, fmt.Errorf("decoding the learned model: %d trailing bytes", r.Len())
	}
	m.name = m.digestName()
	return m, nil
}

func finite32(x float32) bool { return !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0) }

func allFinite(v []float32) bool {
	for _, x := range v {
		if !finite32(x) {
			return false
		}
	}
	return true
}

// digestName names the model by its dimension and a digest of its
// encoding.
func (m *LearnedModel) digestName() string {
	h := sha256.New()
	if err := m.Encode(h); err != nil { // a hash never fails to write
		panic(err)
	}
	return learnedModelPrefix + strconv.Itoa(m.dim) + "-" + hex.EncodeToString(h.Sum(nil)[:6])
}

// Learned is the built-in learned embedder: it embeds with the model it
// holds, which Swap replaces when the corpus is learned again. Without a
// model it fails with ErrNotLearned, so that a store writes items without
// vectors until one is learned. It is safe for concurrent use.
type Learned struct {
	dim   int
	model atomic.Pointer[LearnedModel]
}

// NewLearned returns a learned embedder holding m (nil: none yet) whose
// models have dim dimensions.
func NewLearned(m *LearnedModel, dim int) *Learned {
	l := &Learned{dim: dim}
	if m != nil {
		l.model.Store(m)
	}
	return l
}

// Swap makes m the model and returns the previous one (nil: none).
func (l *Learned) Swap(m *LearnedModel) *LearnedModel { return l.model.Swap(m) }

// Current returns the model, nil when none was learned.
func (l *Learned) Current() *LearnedModel { return l.model.Load() }

// Model names the current model's vector space ("lsa" followed by the
// dimension and a digest), or "lsa-none" before one is learned.
func (l *Learned) Model() string {
	if m := l.model.Load(); m != nil {
		return m.name
	}
	return notLearned{}.Model()
}

// Dim returns the current model's dimension, or before one is learned the
// dimension it will have.
func (l *Learned) Dim() int {
	if m := l.model.Load(); m != nil {
		return m.dim
	}
	return l.dim
}

// Ready reports whether it holds a model: before, a store writes items
// without vectors, quietly, and learning embeds them.
func (l *Learned) Ready() bool { return l.model.Load() != nil }

// Embed returns one unit vector per text, from one model for the whole
// call; a text with no known term gets a zero vector, which matches
// nothing.
func (l *Learned) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	m := l.model.Load()
	if m == nil {
		return nil, ErrNotLearned
	}
	return m.Embed(ctx, texts)
}

// Pin returns an embedder of the current model alone (see
// h4r.PinEmbedder): the model itself, or before one is learned an
// embedder that is not ready.
func (l *Learned) Pin() h4r.Embedder {
	if m := l.model.Load(); m != nil {
		return m
	}
	return notLearned{dim: l.dim}
}

// Model is the model's name, as Name: a model is an embedder of its own
// vector space (Learned.Pin).
func (m *LearnedModel) Model() string { return m.name }

// Embed returns one unit vector per text; a text with no known term gets a
// zero vector, which matches nothing.
func (m *LearnedModel) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	var buf []string
	for i, t := range texts {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("embedding with %s: %w", m.name, err)
			}
		}
		out[i], buf = m.embed(t, buf)
	}
	return out, nil
}

// notLearned is the pin of a learned embedder without a model.
type notLearned struct{ dim int }

func (notLearned) Model() string { return learnedModelPrefix + "-none" }

func (n notLearned) Dim() int { return n.dim }

func (notLearned) Ready() bool { return false }

func (notLearned) Embed(context.Context, []string) ([][]float32, error) { return nil, ErrNotLearned }
