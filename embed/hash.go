package embed

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"

	"github.com/h4r/h4r"
)

// Defaults of the hashing embedder. The weights were chosen on scifact
// (BenchmarkSciFact): see the README's hybrid relevance section.
const (
	DefaultHashDim      = 512
	defaultCharMin      = 3
	defaultCharMax      = 5
	defaultUnigramW     = 1.0
	defaultBigramW      = 0.5
	defaultCharW        = 2.0
	maxHashDim          = 1 << 16
	hashModelVersion    = "v1"
	hashFeatureUnigram  = 'u'
	hashFeatureBigram   = 'b'
	hashFeatureCharGram = 'c'
)

// Hash is the built-in embedder: feature hashing of word unigrams, word
// bigrams and character n-grams of each word (with boundary marks, so
// "<opt" and "ize>" are features), each feature added with a sign taken
// from its hash so that collisions cancel out on average rather than pile
// up. Words are runs of letters and digits, lower-cased; English stop words
// are left out (they carry no topic and, with no IDF to discount them,
// would dominate every vector). It is deterministic,
// safe for concurrent use, and never fails.
type Hash struct {
	dim              int
	charMin, charMax int
	unigramW         float64
	bigramW          float64
	charW            float64
}

// HashOption configures NewHash.
type HashOption func(*Hash)

// WithHashDim sets the dimension (default 512). More dimensions mean fewer
// collisions and more memory: 4 bytes per dimension per item.
func WithHashDim(n int) HashOption { return func(h *Hash) { h.dim = n } }

// WithCharNGrams sets the lengths of the character n-grams (default 3 to 5);
// max 0 turns them off.
func WithCharNGrams(min, max int) HashOption {
	return func(h *Hash) { h.charMin, h.charMax = min, max }
}

// WithFeatureWeights sets the weight of one word, one bigram and of all
// the character n-grams of one word together (defaults 1, 0.5, 2).
func WithFeatureWeights(unigram, bigram, chars float64) HashOption {
	return func(h *Hash) { h.unigramW, h.bigramW, h.charW = unigram, bigram, chars }
}

// NewHash returns the hashing embedder. Bad settings are an *h4r.Error
// naming the setting.
func NewHash(opts ...HashOption) (*Hash, error) {
	h := &Hash{dim: DefaultHashDim, charMin: defaultCharMin, charMax: defaultCharMax,
		unigramW: defaultUnigramW, bigramW: defaultBigramW, charW: defaultCharW}
	for _, o := range opts {
		o(h)
	}
	switch {
	case h.dim < 8 || h.dim > maxHashDim:
		return nil, h4r.Errorf(h4r.EINVALID, "dim", "dimension must be between 8 and %d, got %d", maxHashDim, h.dim)
	case h.charMax != 0 && (h.charMin < 1 || h.charMax < h.charMin || h.charMax > 16):
		return nil, h4r.Errorf(h4r.EINVALID, "charNGrams", "character n-gram lengths must satisfy 1 <= min <= max <= 16, got %d..%d", h.charMin, h.charMax)
	}
	for name, w := range map[string]float64{"unigram": h.unigramW, "bigram": h.bigramW, "chars": h.charW} {
		if math.IsNaN(w) || math.IsInf(w, 0) || w < 0 {
			return nil, h4r.Errorf(h4r.EINVALID, "weights."+name, "feature weight must be a finite number >= 0, got %v", w)
		}
	}
	if h.unigramW == 0 && h.bigramW == 0 && (h.charW == 0 || h.charMax == 0) {
		return nil, h4r.Errorf(h4r.EINVALID, "weights", "at least one kind of feature must have a weight")
	}
	return h, nil
}

// Model names the vector space, settings included: vectors made with other
// settings are not comparable, and a store holding them must re-embed.
func (h *Hash) Model() string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', 4, 64) }
	return fmt.Sprintf("h4r-hash-%s-d%d-c%d-%d-w%s-%s-%s", hashModelVersion, h.dim, h.charMin, h.charMax,
		f(h.unigramW), f(h.bigramW), f(h.charW))
}

// Dim returns the dimension of the vectors.
func (h *Hash) Dim() int { return h.dim }

// Embed returns the vectors of texts. A text without words gets the zero
// vector, which is similar to nothing. A batch is embedded on every core
// (an ingest's batch of a thousand items waits for it); the vectors are
// Vector's, whatever the split. ctx is checked between texts.
func (h *Hash) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	workers := min(runtime.GOMAXPROCS(0), (len(texts)+embedChunk-1)/embedChunk)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				start := int(next.Add(embedChunk)) - embedChunk
				if start >= len(texts) {
					return
				}
				for i := start; i < min(start+embedChunk, len(texts)); i++ {
					out[i] = h.Vector(texts[i])
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil && len(texts) > 0 {
		return nil, err
	}
	return out, nil
}

// embedChunk is how many texts an embedding worker takes at a time.
const embedChunk = 64

// Vector returns the unit vector of one text (zero when it has no words).
func (h *Hash) Vector(text string) []float32 {
	v := make([]float32, h.dim)
	var prev string
	var gram []byte
	for _, w := range words(text) {
		if isStopWord(w) {
			continue
		}
		if h.charMax > 0 && h.charW > 0 {
			gram = h.addCharGrams(v, w, gram)
		}
		h.add(v, hashFeatureUnigram, w, "", h.unigramW)
		if prev != "" && h.bigramW > 0 {
			h.add(v, hashFeatureBigram, prev, w, h.bigramW)
		}
		prev = w
	}
	normalize(v)
	return v
}

// addCharGrams adds the character n-grams of "<w>", weighing
// charW / sqrt(count) each, so that a long word does not outweigh a short
// one by its number of grams. buf is reused.
func (h *Hash) addCharGrams(v []float32, w string, buf []byte) []byte {
	runes := []rune("<" + w + ">")
	n := 0
	for size := h.charMin; size <= h.charMax; size++ {
		if len(runes) >= size {
			n += len(runes) - size + 1
		}
	}
	if n == 0 {
		return buf
	}
	weight := h.charW / math.Sqrt(float64(n))
	for size := h.charMin; size <= h.charMax; size++ {
		for i := 0; i+size <= len(runes); i++ {
			buf = buf[:0]
			buf = append(buf, hashFeatureCharGram)
			buf = append(buf, string(runes[i:i+size])...)
			h.addHash(v, hashBytes(buf), weight)
		}
	}
	return buf
}

func (h *Hash) add(v []float32, kind byte, a, b string, weight float64) {
	sum := fnvString(fnvByte(fnvOffset, kind), a)
	if b != "" {
		sum = fnvString(fnvByte(sum, 0), b)
	}
	h.addHash(v, sum, weight)
}

// addHash adds ±weight at the feature's index; the sign is the hash's top
// bit, independent of the index (the low bits).
func (h *Hash) addHash(v []float32, sum uint64, weight float64) {
	sum = fmix64(sum)
	if sum>>63 == 1 {
		weight = -weight
	}
	v[sum%uint64(h.dim)] += float32(weight)
}

// FNV-1a, 64 bits, inline so that hashing a feature allocates nothing.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// fmix64 is MurmurHash3's finaliser: FNV's low bits, which pick the
// index, depend on few input bits; after mixing every output bit depends on
// every input bit.
func fmix64(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}

func fnvByte(sum uint64, c byte) uint64 { return (sum ^ uint64(c)) * fnvPrime }

func fnvString(sum uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		sum = fnvByte(sum, s[i])
	}
	return sum
}

func hashBytes(b []byte) uint64 {
	sum := uint64(fnvOffset)
	for _, c := range b {
		sum = fnvByte(sum, c)
	}
	return sum
}

// words splits text into lower-cased runs of letters, digits and marks.
func words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r) && !unicode.IsMark(r)
	})
}

// isStopWord reports whether w is a common English function word, left
// out of word features. A switch, not a map: no package-level state.
func isStopWord(w string) bool {
	switch w {
	case "a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are",
		"as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but",
		"by", "can", "could", "did", "do", "does", "doing", "down", "during", "each", "few", "for",
		"from", "further", "had", "has", "have", "having", "he", "her", "here", "hers", "herself",
		"him", "himself", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself",
		"just", "me", "more", "most", "my", "myself", "no", "nor", "not", "now", "of", "off", "on",
		"once", "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "same",
		"she", "should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them",
		"themselves", "then", "there", "these", "they", "this", "those", "through", "to", "too",
		"under", "until", "up", "very", "was", "we", "were", "what", "when", "where", "which",
		"while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours", "yourself",
		"yourselves", "also", "may", "might", "must", "shall", "s", "t":
		return true
	}
	return false
}
