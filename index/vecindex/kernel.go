package vecindex

import (
	"math"
)

// Query is a query vector prepared once for scanning many int8 codes. Its
// components are rounded to integers too (int16 codes with one scale), so
// that a vector's score is an exact integer dot product times two scales:
// the same integer whether it is summed by the vector unit, by the plain
// loop or over the nonzero components alone, in any order. A score does
// not depend on how it was scanned, and the machine's widest integer
// instructions can compute it.
type Query struct {
	dim    int
	codes  []int16 // component ≈ code × scale
	scale  float32 // NaN when the query has a NaN or infinite component
	l1     float64 // |q|₁ of the float32 query
	sparse *sparseQuery
}

// queryCodeMax bounds the query's integer codes for dimension d: the
// largest |code| such that a dot product with d int8 codes (|c| ≤ 128)
// cannot leave int32, in whatever order it is summed, and never beyond
// int16's range.
func queryCodeMax(d int) float32 {
	if d <= 0 {
		return math.MaxInt16
	}
	return float32(min(math.MaxInt16, (math.MaxInt32)/(128*d)))
}

// Prepare readies q for scanning many int8 vectors of its dimension.
func Prepare(q []float32) Query {
	pq := Query{dim: len(q), codes: make([]int16, len(q))}
	var m float64
	for _, v := range q {
		a := math.Abs(float64(v))
		pq.l1 += a
		m = max(m, a)
	}
	switch {
	case math.IsNaN(m) || math.IsInf(m, 0) || math.IsNaN(pq.l1):
		pq.scale = float32(math.NaN())
		return pq
	case m == 0:
		return pq
	}
	top := queryCodeMax(len(q))
	pq.scale = float32(m) / top
	if pq.scale == 0 { // components too small for a float32 step: scores of 0
		return pq
	}
	nonzero := 0
	for i, v := range q {
		c := math.Round(float64(v) / float64(pq.scale))
		pq.codes[i] = int16(max(-float64(top), min(float64(top), c)))
		if pq.codes[i] != 0 {
			nonzero++
		}
	}
	if nonzero <= len(q)/4 && !hasVectorUnit {
		pq.sparse = sparseOf(pq.codes, nonzero)
	}
	return pq
}

// Slack is the most a score of this query against codes of scale at most
// maxScale can be off from the exact float32 dot product: the vector's
// rounding, |q|₁ × maxScale / 2, plus the query's own, at most half a
// query step on each of up to 128 × maxScale per component.
func (q Query) Slack(maxScale float32) float64 {
	s := float64(maxScale)
	return q.l1*s/2 + float64(q.scale)/2*128*float64(q.dim)*s
}

// DotCodes is q's approximate dot product with the int8 codes c (of q's
// dimension): the exact integer dot product times the query's scale.
func (q Query) DotCodes(c []int8) float32 {
	c = c[:q.dim]
	if q.sparse != nil {
		return float32(q.sparse.dot(c)) * q.scale
	}
	return float32(dotInt(q.codes, c)) * q.scale
}

// scoreChunk is how many vectors ScoreCodes hands the integer kernel at a
// time: their sums fit on the stack.
const scoreChunk = 256

// ScoreCodes sets dst[i] to the score of the i-th vector of codes (of q's
// dimension, one after another) times scales[i], for every i of dst: the
// same scores, bit for bit, as DotCodes(c)*scale vector by vector.
func (q Query) ScoreCodes(dst []float32, codes []int8, scales []float32) {
	d := q.dim
	codes, scales = codes[:len(dst)*d], scales[:len(dst)]
	if q.sparse != nil {
		for i := range dst {
			dst[i] = float32(q.sparse.dot(codes[i*d:(i+1)*d:(i+1)*d])) * q.scale * scales[i]
		}
		return
	}
	var sums [scoreChunk]int32
	for lo := 0; lo < len(dst); lo += scoreChunk {
		n := min(scoreChunk, len(dst)-lo)
		dotInts(sums[:n], q.codes, codes[lo*d:(lo+n)*d])
		for i, s := range sums[:n] {
			dst[lo+i] = float32(s) * q.scale * scales[lo+i]
		}
	}
}

// dotInts sets sums[i] to the integer dot product of q with the i-th
// vector of codes, by the vector unit where the machine has one.
func dotInts(sums []int32, q []int16, codes []int8) {
	d := len(q)
	wide := d &^ 15 // the vector unit takes sixteen components at a time
	if hasVectorUnit && wide > 0 {
		dotIntsWide(sums, q, codes, wide)
		if wide == d {
			return
		}
		for i := range sums {
			sums[i] += dotInt(q[wide:], codes[i*d+wide:(i+1)*d])
		}
		return
	}
	for i := range sums {
		sums[i] = dotInt(q, codes[i*d:(i+1)*d])
	}
}

// dotInt is the integer dot product of q and c (c at least as long as q).
// No sum can leave int32 (queryCodeMax), so its order does not matter.
func dotInt(q []int16, c []int8) int32 {
	c = c[:len(q)]
	var s0, s1, s2, s3 int32
	for len(q) >= 4 && len(c) >= 4 {
		s0 += int32(q[0]) * int32(c[0])
		s1 += int32(q[1]) * int32(c[1])
		s2 += int32(q[2]) * int32(c[2])
		s3 += int32(q[3]) * int32(c[3])
		q, c = q[4:], c[4:]
	}
	for i := range q {
		s0 += int32(q[i]) * int32(c[i])
	}
	return s0 + s1 + s2 + s3
}

// sparseQuery is a query's nonzero integer components. Without a vector
// unit, a query with at most a quarter of its components nonzero (the
// hashing embedder's have about a tenth) is scanned over those alone.
type sparseQuery struct {
	idx []int32
	val []int32
}

func sparseOf(codes []int16, nonzero int) *sparseQuery {
	sq := &sparseQuery{idx: make([]int32, 0, nonzero), val: make([]int32, 0, nonzero)}
	for i, v := range codes {
		if v != 0 {
			sq.idx = append(sq.idx, int32(i))
			sq.val = append(sq.val, int32(v))
		}
	}
	return sq
}

func (sq *sparseQuery) dot(c []int8) int32 {
	val := sq.val[:len(sq.idx)]
	var s int32
	for k, i := range sq.idx {
		s += val[k] * int32(c[i])
	}
	return s
}
