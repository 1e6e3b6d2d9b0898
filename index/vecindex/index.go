package vecindex

import (
	"cmp"
	"math"
	"slices"
)

// Index holds int8-quantised vectors of one dimension, keyed by id. It is
// not safe for concurrent use: the stores guard it with their own lock. Its
// zero value is empty, of no dimension yet.
type Index struct {
	dim      int
	ids      []string
	pos      map[string]int
	codes    []int8    // len(ids)*dim
	scales   []float32 // per vector: component ≈ code × scale
	maxScale float32   // the largest scale ever stored: bounds the error of any score
}

// Reset empties the index and forgets its dimension, keeping its memory.
func (x *Index) Reset() {
	x.dim, x.ids, x.codes, x.scales, x.maxScale = 0, x.ids[:0], x.codes[:0], x.scales[:0], 0
	x.pos = map[string]int{}
}

// Dim is the dimension of the stored vectors (0 while none was stored).
func (x *Index) Dim() int { return x.dim }

// Len is the number of stored vectors.
func (x *Index) Len() int { return len(x.ids) }

// IDs are the stored ids in storage order (that of Scores); the slice is
// the index's own, valid until the next change.
func (x *Index) IDs() []string { return x.ids }

// Bytes is the memory the codes and scales take.
func (x *Index) Bytes() int { return cap(x.codes) + 4*cap(x.scales) }

// Put stores vec (of the index's dimension; the first vector sets it) under
// id, replacing any vector id had.
func (x *Index) Put(id string, vec []float32) {
	if x.pos == nil {
		x.pos = map[string]int{}
	}
	if x.dim == 0 {
		x.dim = len(vec)
	}
	i, ok := x.pos[id]
	if !ok {
		i = len(x.ids)
		x.pos[id] = i
		x.ids = append(x.ids, id)
		x.codes = slices.Grow(x.codes, x.dim)[:len(x.codes)+x.dim]
		x.scales = append(x.scales, 0)
	}
	x.scales[i] = quantize(x.codes[i*x.dim:(i+1)*x.dim], vec)
	x.maxScale = max(x.maxScale, x.scales[i])
}

// PutCodes stores codes already quantised (by Quantize) under id; codes
// must have the index's dimension (the first vector sets it).
func (x *Index) PutCodes(id string, codes []int8, scale float32) {
	if x.pos == nil {
		x.pos = map[string]int{}
	}
	if x.dim == 0 {
		x.dim = len(codes)
	}
	i, ok := x.pos[id]
	if !ok {
		i = len(x.ids)
		x.pos[id] = i
		x.ids = append(x.ids, id)
		x.codes = slices.Grow(x.codes, x.dim)[:len(x.codes)+x.dim]
		x.scales = append(x.scales, 0)
	}
	copy(x.codes[i*x.dim:(i+1)*x.dim], codes)
	x.scales[i] = scale
	x.maxScale = max(x.maxScale, scale)
}

// Quantize returns vec's int8 codes and their scale, as Put stores them.
func Quantize(vec []float32) ([]int8, float32) {
	codes := make([]int8, len(vec))
	return codes, quantize(codes, vec)
}

// quantize writes vec's codes into dst and returns their scale: the
// largest magnitude maps to ±127, every component is rounded to the
// nearest code, so each is off by at most scale/2.
func quantize(dst []int8, vec []float32) float32 {
	var m float32
	for _, v := range vec {
		m = max(m, float32(math.Abs(float64(v))))
	}
	if m == 0 || math.IsNaN(float64(m)) || math.IsInf(float64(m), 0) {
		clear(dst)
		return 0
	}
	scale := m / 127
	for j, v := range vec {
		dst[j] = int8(math.Round(float64(v / scale)))
	}
	return scale
}

// Remove deletes id's vector, if any, moving the last vector into its place.
func (x *Index) Remove(id string) {
	i, ok := x.pos[id]
	if !ok {
		return
	}
	last := len(x.ids) - 1
	if i != last {
		x.ids[i] = x.ids[last]
		x.pos[x.ids[i]] = i
		copy(x.codes[i*x.dim:(i+1)*x.dim], x.codes[last*x.dim:])
		x.scales[i] = x.scales[last]
	}
	x.ids = x.ids[:last]
	x.codes = x.codes[:last*x.dim]
	x.scales = x.scales[:last]
	delete(x.pos, id)
}

// Scores returns the approximate similarity (dot product; cosine for unit
// vectors) of q to every stored vector, in storage order, and the most any
// of them can be off from the exact float32 dot product (Query.Slack).
func (x *Index) Scores(q []float32) (scores []float32, slack float64) {
	out := make([]float32, len(x.ids))
	pq := Prepare(q)
	if len(x.ids) > 0 {
		pq.ScoreCodes(out, x.codes, x.scales)
	}
	return out, pq.Slack(x.maxScale)
}

// codeValue is float32(c) for every int8 c, indexed by uint8(c). Reading
// it costs one load where converting costs a sign extension, a register
// clear and a conversion: the scan is bound by how many instructions it
// issues per component (BenchmarkDotCodes).
var codeValue = func() (t [256]float32) {
	for i := range t {
		t[i] = float32(int8(uint8(i)))
	}
	return t
}()

// DotCodes is the dot product of a float32 vector q with int8 codes of one
// length, as codes are placed against centroids (a search scores codes
// through a prepared Query instead). It sums in four float32 lanes
// (component i into lane i mod 4, in ascending order; a tail past the last
// whole group of four into lane 0), then s0+s1+s2+s3, so its rounding does
// not depend on the caller. Eight components a round, each lane taking
// two; the slices advance instead of an index so that the compiler checks
// bounds once a round.
func DotCodes(q []float32, c []int8) float32 {
	c = c[:len(q)]
	t := &codeValue
	var s0, s1, s2, s3 float32
	for len(q) >= 8 && len(c) >= 8 {
		s0 += q[0] * t[uint8(c[0])]
		s1 += q[1] * t[uint8(c[1])]
		s2 += q[2] * t[uint8(c[2])]
		s3 += q[3] * t[uint8(c[3])]
		s0 += q[4] * t[uint8(c[4])]
		s1 += q[5] * t[uint8(c[5])]
		s2 += q[6] * t[uint8(c[6])]
		s3 += q[7] * t[uint8(c[7])]
		q, c = q[8:], c[8:]
	}
	if len(q) >= 4 && len(c) >= 4 {
		s0 += q[0] * t[uint8(c[0])]
		s1 += q[1] * t[uint8(c[1])]
		s2 += q[2] * t[uint8(c[2])]
		s3 += q[3] * t[uint8(c[3])]
		q, c = q[4:], c[4:]
	}
	for i := range q {
		s0 += q[i] * t[uint8(c[i])]
	}
	return s0 + s1 + s2 + s3
}

// Dot is the dot product of two float32 vectors of one length; for unit
// vectors it is the cosine. Its sum has one order on every machine, so that
// a score does not depend on where it was computed: the first multiple of
// 16 components in sixteen lanes (component i in lane i mod 16), the lanes
// added in a fixed tree (dotLanes), then the rest in four (dotPlain); each
// product is rounded to float32 before it is added, never fused. The
// vector unit computes the lanes eight at a time (dotFloatsWide), the
// plain loop one at a time, to the same bits.
func Dot(a, b []float32) float32 {
	b = b[:len(a)]
	wide := len(a) &^ 15
	if wide == 0 {
		return dotPlain(a, b)
	}
	var s float32
	if hasVectorUnit {
		s = dotFloatsWide(a, b, wide)
	} else {
		s = dotLanes(a[:wide], b[:wide])
	}
	return s + dotPlain(a[wide:], b[wide:])
}

// dotLanes is the vector unit's sum of a and b (a length that is a
// multiple of 16) by plain arithmetic: sixteen running sums, then lane k
// and lane k+8 added, then k and k+4 of those, then the pairs, as
// dotFloatsWide adds its two eight-lane registers, their halves and then
// across (VHADDPS twice).
func dotLanes(a, b []float32) float32 {
	b = b[:len(a)]
	// Sixteen named sums rather than an array, which the compiler would
	// keep in memory.
	var s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, s12, s13, s14, s15 float32
	for i := 0; i+16 <= len(a); i += 16 {
		x, y := a[i:i+16:i+16], b[i:i+16:i+16]
		s0 += float32(x[0] * y[0])
		s1 += float32(x[1] * y[1])
		s2 += float32(x[2] * y[2])
		s3 += float32(x[3] * y[3])
		s4 += float32(x[4] * y[4])
		s5 += float32(x[5] * y[5])
		s6 += float32(x[6] * y[6])
		s7 += float32(x[7] * y[7])
		s8 += float32(x[8] * y[8])
		s9 += float32(x[9] * y[9])
		s10 += float32(x[10] * y[10])
		s11 += float32(x[11] * y[11])
		s12 += float32(x[12] * y[12])
		s13 += float32(x[13] * y[13])
		s14 += float32(x[14] * y[14])
		s15 += float32(x[15] * y[15])
	}
	u0, u1, u2, u3 := s0+s8, s1+s9, s2+s10, s3+s11
	u4, u5, u6, u7 := s4+s12, s5+s13, s6+s14, s7+s15
	t0, t1, t2, t3 := u0+u4, u1+u5, u2+u6, u3+u7
	return (t0 + t1) + (t2 + t3)
}

// dotPlain is the dot product in four running sums (component i in sum
// i mod 4, the tail in the first), added in order.
func dotPlain(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += float32(a[i] * b[i])
		s1 += float32(a[i+1] * b[i+1])
		s2 += float32(a[i+2] * b[i+2])
		s3 += float32(a[i+3] * b[i+3])
	}
	for ; i < len(a); i++ {
		s0 += float32(a[i] * b[i])
	}
	return s0 + s1 + s2 + s3
}

// Scored is one hit: an id and its score.
type Scored struct {
	Score float64
	ID    string
}

// Worse orders hits: lower score, then (for equal scores) larger id, so
// that results do not depend on the order vectors happen to be stored in.
func Worse(a, b Scored) bool {
	if a.Score != b.Score {
		return a.Score < b.Score
	}
	return a.ID > b.ID
}

// Top returns the k best of scores (of the items ids, in one order), best
// first, at least floor. It collects passing scores into a buffer of 2k;
// when the buffer fills, a selection keeps its k best and their worst
// score becomes the cut, so that nearly every score of a long scan is
// dropped with one comparison, and a selection of O(k) follows at least k
// admitted scores: constant work per admitted score on average, where a
// heap took a logarithm. Entries hold a score and a position (8
// bytes) rather than a hit, and an id is read only to break a tie.
func Top(ids []string, scores []float32, k int, floor float64) []Scored {
	ids = ids[:len(scores)]
	return TopOf(func(i int) string { return ids[i] }, scores, k, floor)
}

// TopOf is Top for a caller that keeps no id per score: idAt(i) is the id
// of scores[i], asked only to break ties and for the k ids returned.
func TopOf(idAt func(i int) string, scores []float32, k int, floor float64) []Scored {
	if k <= 0 {
		return []Scored{}
	}
	t := topSet{idAt: idAt, h: make([]topEntry, 0, min(2*k, len(scores)))}
	i := 0
	for ; i < len(scores) && len(t.h) < cap(t.h); i++ {
		if s := scores[i]; float64(s) >= floor {
			t.h = append(t.h, topEntry{s, int32(i)})
		}
	}
	if len(t.h) == cap(t.h) && len(t.h) > k {
		// The cut is the k-th best score, at least floor: a later score
		// below it cannot be among the k best.
		cut := t.keepBest(k)
		for ; i < len(scores); i++ {
			s := scores[i]
			if s < cut {
				continue
			}
			t.h = append(t.h, topEntry{s, int32(i)})
			if len(t.h) == cap(t.h) {
				cut = t.keepBest(k)
			}
		}
	}
	if len(t.h) > k {
		t.selectBest(k)
		t.h = t.h[:k]
	}
	slices.SortFunc(t.h, func(a, b topEntry) int {
		if t.better(a, b) {
			return -1
		}
		return 1
	})
	out := make([]Scored, len(t.h))
	for j, e := range t.h {
		out[j] = Scored{Score: float64(e.score), ID: t.idAt(int(e.at))}
	}
	return out
}

// topEntry is a score of Top's buffer and its position in the scan.
type topEntry struct {
	score float32
	at    int32
}

// topSet is Top's buffer, ordered as Worse orders hits.
type topSet struct {
	idAt func(int) string
	h    []topEntry
}

// better says whether a ranks before b: a higher score, or an equal score
// and a smaller id.
func (t *topSet) better(a, b topEntry) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	return t.tieBefore(a, b)
}

// tieBefore breaks a tie of better by id. It is a method of its own so
// that better, called for every comparison of a selection, stays small
// enough to inline: the calls through idAt would not. A selection compares
// its pivot with itself too, which needs no id.
func (t *topSet) tieBefore(a, b topEntry) bool {
	if a.at == b.at {
		return false
	}
	return t.idAt(int(a.at)) < t.idAt(int(b.at))
}

// keepBest keeps the buffer's k best entries and returns the worst score
// among them.
func (t *topSet) keepBest(k int) float32 {
	t.selectBest(k)
	t.h = t.h[:k]
	cut := t.h[0].score
	for _, e := range t.h[1:] {
		cut = min(cut, e.score)
	}
	return cut
}

// selectBest reorders the buffer so that its first k entries are its k
// best, in no order (Hoare's selection: expected time linear in its
// length, with a median-of-three pivot against sorted runs).
func (t *topSet) selectBest(k int) {
	h := t.h
	lo, hi := 0, len(h)-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		if t.better(h[mid], h[lo]) {
			h[mid], h[lo] = h[lo], h[mid]
		}
		if t.better(h[hi], h[lo]) {
			h[hi], h[lo] = h[lo], h[hi]
		}
		if t.better(h[hi], h[mid]) {
			h[hi], h[mid] = h[mid], h[hi]
		}
		p := h[mid] // the median of the three
		i, j := lo, hi
		for i <= j {
			for t.better(h[i], p) {
				i++
			}
			for t.better(p, h[j]) {
				j--
			}
			if i <= j {
				h[i], h[j] = h[j], h[i]
				i++
				j--
			}
		}
		// h[lo..j] rank no worse than p, h[i..hi] no better, and what lies
		// between equals p.
		switch {
		case k-1 <= j:
			hi = j
		case k-1 >= i:
			lo = i
		default:
			return
		}
	}
}

// Sort orders hits best first.
func Sort(hits []Scored) {
	slices.SortFunc(hits, func(a, b Scored) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
}

// RescoreFactor is how many approximate candidates a search rescores per
// hit it returns. On scifact's test queries (embed
// TestCompactVectorRecallSciFact) the top 100 shares 0.992 of the exact
// float32 top 100 with factor 1 and all of it with factor 2 (and 3).
const RescoreFactor = 2

// Candidates returns how many approximate hits to rescore for limit hits.
func Candidates(limit int) int { return limit * RescoreFactor }

// Rescore replaces the candidates' approximate scores with the exact dot
// product of q and their float32 vectors (exact, by id; a candidate absent
// from it, deleted meanwhile, is dropped) and returns the best limit of
// them at least minScore, best first.
func Rescore(q []float32, cands []Scored, exact map[string][]float32, limit int, minScore float64) []Scored {
	vecs := make([][]float32, len(cands))
	for i, c := range cands {
		vecs[i] = exact[c.ID]
	}
	return RescoreAligned(q, cands, vecs, limit, minScore)
}

// RescoreAligned is Rescore with the candidates' vectors given in their
// order (vecs[i] is cands[i]'s; nil for one deleted meanwhile), for a
// store that reads them without building a map.
func RescoreAligned(q []float32, cands []Scored, vecs [][]float32, limit int, minScore float64) []Scored {
	out := make([]Scored, 0, len(cands))
	for i, c := range cands {
		v := vecs[i]
		if v == nil || len(v) != len(q) {
			continue
		}
		s := float64(Dot(q, v))
		if s >= minScore {
			out = append(out, Scored{Score: s, ID: c.ID})
		}
	}
	Sort(out)
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}
