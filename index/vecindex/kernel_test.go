package vecindex

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// dotCodesLoop is the plain loop the scan's scores are defined by: four
// float32 lanes by index mod 4, the tail into lane 0, summed s0+s1+s2+s3.
func dotCodesLoop(q []float32, c []int8) float32 {
	var s [4]float32
	whole := len(q) - len(q)%4
	for i := range q {
		lane := i % 4
		if i >= whole {
			lane = 0
		}
		s[lane] += q[i] * float32(c[i])
	}
	return s[0] + s[1] + s[2] + s[3]
}

// DotCodes (the float32 scan the vector index assigns codes to centroids
// with) gives the plain loop's scores bit for bit, for dimensions on both
// sides of every unrolling boundary and for codes at the ends of the int8
// range.
func TestDotCodesEqualsPlainLoop(t *testing.T) {
	for _, tc := range []struct {
		name   string
		dim    int
		extern bool // codes only -128, -127, 0, 127
	}{
		{"dim1", 1, false},
		{"dim3", 3, false},
		{"dim4", 4, false},
		{"dim7", 7, false},
		{"dim8", 8, false},
		{"dim12_half_round", 12, false},
		{"dim13_tail", 13, false},
		{"dim128_learned", 128, false},
		{"dim131_tail", 131, false},
		{"dim512_hashing", 512, false},
		{"dim128_extremes", 128, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, uint64(tc.dim)))
			const n = 50
			codes := make([]int8, n*tc.dim)
			for i := range codes {
				codes[i] = int8(rng.IntN(256) - 128)
				if tc.extern {
					codes[i] = []int8{-128, -127, 0, 127}[rng.IntN(4)]
				}
			}
			for range 10 {
				q := make([]float32, tc.dim)
				for i := range q {
					q[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(7)-3)))
				}
				for i := range n {
					c := codes[i*tc.dim : (i+1)*tc.dim]
					want := dotCodesLoop(q, c)
					if got := DotCodes(q, c); math.Float32bits(got) != math.Float32bits(want) {
						t.Fatalf("vector %d: DotCodes %v, plain loop %v", i, got, want)
					}
				}
			}
		})
	}
}

// intScore is a prepared query's score of codes c by its definition: the
// integer dot product of the query's codes with c, summed in int64, times
// the query's scale.
func intScore(q Query, c []int8) float32 {
	var s int64
	for i, v := range q.codes {
		s += int64(v) * int64(c[i])
	}
	return float32(s) * q.scale
}

// ScoreCodes and a prepared query's DotCodes give the integer definition's
// scores bit for bit: the vector unit's blocks of sixteen and thirty-two,
// the tails past them, codes at the ends of the int8 range, sparse queries,
// and dimensions as large as hosted models' (where the query's codes are
// narrowed so that no sum leaves int32).
func TestQueryScoresEqualIntegerDefinition(t *testing.T) {
	for _, tc := range []struct {
		name    string
		dim     int
		extreme bool // codes only -128, -127, 0, 127
		aligned bool // every code -128 and every query component -1: the largest sum
		nonzero int  // 0: every component
	}{
		{"dim1", 1, false, false, 0},
		{"dim15_below_block", 15, false, false, 0},
		{"dim16_one_block", 16, false, false, 0},
		{"dim17_block_tail", 17, false, false, 0},
		{"dim32_two_blocks", 32, false, false, 0},
		{"dim48_pair_then_single", 48, false, false, 0},
		{"dim128_learned", 128, false, false, 0},
		{"dim131_tail", 131, false, false, 0},
		{"dim128_extremes", 128, true, false, 0},
		{"dim512_hashing_sparse", 512, false, false, 50},
		{"dim1536_hosted", 1536, true, false, 0},
		{"dim3072_hosted_narrowed", 3072, true, false, 0},
		{"dim3072_largest_sum", 3072, false, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, uint64(tc.dim)))
			const n = 300 // more than one chunk of ScoreCodes
			codes := make([]int8, n*tc.dim)
			scales := make([]float32, n)
			for i := range codes {
				codes[i] = int8(rng.IntN(256) - 128)
				if tc.extreme {
					codes[i] = []int8{-128, -127, 0, 127}[rng.IntN(4)]
				}
				if tc.aligned {
					codes[i] = -128
				}
			}
			for i := range scales {
				scales[i] = rng.Float32() / 127
			}
			for range 5 {
				q := randomUnit(rng, tc.dim)
				if tc.nonzero > 0 {
					q = sparseUnit(rng, tc.dim, tc.nonzero)
				}
				if tc.extreme { // the query's codes at their bound too
					for i := range q {
						q[i] = []float32{-1, 1}[rng.IntN(2)]
					}
				}
				if tc.aligned {
					for i := range q {
						q[i] = -1
					}
				}
				pq := Prepare(q)
				dst := make([]float32, n)
				pq.ScoreCodes(dst, codes, scales)
				for i := range n {
					c := codes[i*tc.dim : (i+1)*tc.dim]
					want := intScore(pq, c)
					if got := pq.DotCodes(c); math.Float32bits(got) != math.Float32bits(want) {
						t.Fatalf("vector %d: DotCodes %v, integer definition %v", i, got, want)
					}
					if math.Float32bits(dst[i]) != math.Float32bits(want*scales[i]) {
						t.Fatalf("vector %d: ScoreCodes %v, integer definition %v", i, dst[i], want*scales[i])
					}
				}
			}
		})
	}
}

// A score is within the query's Slack of the exact float32 dot product of
// the query and the vector the codes were quantised from.
func TestScoreWithinSlack(t *testing.T) {
	for _, dim := range []int{16, 128, 131, 1536} {
		t.Run(fmt.Sprintf("dim%d", dim), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(11, uint64(dim)))
			var x Index
			vecs := make([][]float32, 200)
			for i := range vecs {
				vecs[i] = randomUnit(rng, dim)
				x.Put(fmt.Sprint(i), vecs[i])
			}
			for range 20 {
				q := randomUnit(rng, dim)
				scores, slack := x.Scores(q)
				for i, v := range vecs {
					if d := math.Abs(float64(scores[i]) - float64(Dot(q, v))); d > slack {
						t.Fatalf("vector %d: score %v off the exact %v by %g, more than the slack %g", i, scores[i], Dot(q, v), d, slack)
					}
				}
			}
		})
	}
}

// FuzzDotCodes: for any query and codes, the prepared query's DotCodes and
// ScoreCodes agree bit for bit with the integer definition; a query with a
// NaN or an infinity scores NaN everywhere.
func FuzzDotCodes(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, []byte{0x80, 0x7f, 1})
	f.Add(make([]byte, 4*9), []byte{0x80})
	f.Add(binary.LittleEndian.AppendUint32(nil, math.Float32bits(float32(math.Inf(1)))), []byte{0})
	f.Add(make([]byte, 4*40), []byte{0x7f, 0x80, 3})
	f.Fuzz(func(t *testing.T, qb, cb []byte) {
		q := make([]float32, len(qb)/4)
		finite := true
		for i := range q {
			q[i] = math.Float32frombits(binary.LittleEndian.Uint32(qb[4*i:]))
			finite = finite && !math.IsNaN(float64(q[i])) && !math.IsInf(float64(q[i]), 0)
		}
		if len(q) == 0 || len(cb) == 0 {
			return
		}
		c := make([]int8, len(q))
		for i := range c {
			c[i] = int8(cb[i%len(cb)])
		}
		pq := Prepare(q)
		want := intScore(pq, c)
		if !finite && !math.IsNaN(float64(want)) {
			t.Fatalf("a query with a non-finite component scores %v", want)
		}
		same := func(a, b float32) bool {
			return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
		}
		if got := pq.DotCodes(c); !same(got, want) {
			t.Fatalf("DotCodes %v, integer definition %v", got, want)
		}
		dst := make([]float32, 1)
		pq.ScoreCodes(dst, c, []float32{1})
		if !same(dst[0], want) {
			t.Fatalf("ScoreCodes %v, integer definition %v", dst[0], want)
		}
	})
}

// topSorted is Top by its definition: every score at least floor, sorted
// best first, the first k.
func topSorted(ids []string, scores []float32, k int, floor float64) []Scored {
	var all []Scored
	for i, s := range scores {
		if float64(s) >= floor {
			all = append(all, Scored{Score: float64(s), ID: ids[i]})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return Worse(all[j], all[i]) })
	return all[:min(k, len(all))]
}

// Top returns what sorting every score would, with ties (broken by id),
// scores under the floor, k beyond the count and k of zero.
func TestTopEqualsSorting(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	for _, tc := range []struct {
		name   string
		n, k   int
		levels int // distinct scores: few make ties
		floor  float64
	}{
		{"many_k200", 10_000, 200, 0, -1},
		{"ties_k50", 2_000, 50, 5, -1},
		{"floor_cuts", 3_000, 100, 0, 0.1},
		{"k_beyond_n", 30, 100, 0, -1},
		{"k_zero", 30, 0, 0, -1},
		{"none_pass", 100, 10, 0, 10},
		{"k1", 500, 1, 3, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids := make([]string, tc.n)
			scores := make([]float32, tc.n)
			for i := range ids {
				ids[i] = string(rune('a'+rng.IntN(26))) + string(rune('a'+i%26)) + string(rune('0'+i/26%40)) + string(rune('0'+i/1040))
				scores[i] = float32(rng.NormFloat64() * 0.1)
				if tc.levels > 0 {
					scores[i] = float32(rng.IntN(tc.levels)) / 10
				}
			}
			got, want := Top(ids, scores, tc.k, tc.floor), topSorted(ids, scores, tc.k, tc.floor)
			if !slices.Equal(got, want) {
				t.Fatalf("Top = %d hits %v…, sorting gives %d %v…", len(got), got[:min(3, len(got))], len(want), want[:min(3, len(want))])
			}
		})
	}
}

// FuzzTop checks Top against sorting every score, on scores of few
// levels (ties broken by id), repeated ids, floors and any k.
func FuzzTop(f *testing.F) {
	f.Add([]byte{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5}, uint8(3), int8(-128))
	f.Add([]byte{7, 7, 7, 7, 7, 7, 7, 7}, uint8(2), int8(0))
	f.Add([]byte{0, 255, 128, 64, 32, 16, 8, 4, 2, 1}, uint8(0), int8(10))
	f.Fuzz(func(t *testing.T, raw []byte, k uint8, floor int8) {
		ids := make([]string, len(raw))
		scores := make([]float32, len(raw))
		for i, b := range raw {
			scores[i] = float32(b%16) / 4
			ids[i] = string(rune('a' + (i*7+int(b))%20))
		}
		fl := float64(floor) / 32
		got, want := Top(ids, scores, int(k), fl), topSorted(ids, scores, int(k), fl)
		if !slices.Equal(got, want) {
			t.Fatalf("Top(k=%d, floor=%v) = %v, sorting gives %v", k, fl, got, want)
		}
	})
}

// dotReference is the dot product summed in float64, and the sum of the
// products' magnitudes that bounds a float32 sum's rounding.
func dotReference(a, b []float32) (dot, magnitude float64) {
	for i := range a {
		p := float64(a[i]) * float64(b[i])
		dot += p
		magnitude += math.Abs(p)
	}
	return dot, magnitude
}

// dotDefinition is Dot's order of summation, by plain arithmetic.
func dotDefinition(a, b []float32) float32 {
	wide := len(a) &^ 15
	if wide == 0 {
		return dotPlain(a, b)
	}
	return dotLanes(a[:wide], b[:wide]) + dotPlain(a[wide:], b[wide:])
}

// checkDot compares Dot with its definition, bit for bit (with or without
// the vector unit), and with the float64 sum: a float32 sum of n products
// is within about n·2⁻²⁴ of their magnitude.
func checkDot(t *testing.T, a, b []float32) {
	t.Helper()
	got := Dot(a, b)
	if def := dotDefinition(a, b); math.Float32bits(got) != math.Float32bits(def) {
		t.Fatalf("Dot of %d components = %v, its definition %v (vector unit: %v)", len(a), got, def, hasVectorUnit)
	}
	want, magnitude := dotReference(a, b)
	if tol := float64(len(a)+2) * 0x1p-23 * magnitude; math.Abs(float64(got)-want) > tol {
		t.Fatalf("Dot of %d components = %v, the float64 sum is %v (tolerance %v)", len(a), got, want, tol)
	}
}

// Dot agrees with its definition and the float64 sum at every length
// around the vector unit's blocks of 16 and at embedding sizes, on slices
// that start off any alignment.
func TestDotEqualsFloat64Sum(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	buf := make([]float32, 2*(385+3))
	for i := range buf {
		buf[i] = float32(rng.NormFloat64())
	}
	for _, n := range []int{0, 1, 15, 16, 17, 31, 32, 33, 47, 64, 100, 128, 384, 385} {
		for _, off := range []int{0, 1, 3} {
			t.Run(fmt.Sprintf("n%d_off%d", n, off), func(t *testing.T) {
				checkDot(t, buf[off:off+n], buf[len(buf)/2+off:len(buf)/2+off+n])
			})
		}
	}
}

// FuzzDot: any finite components, any length.
func FuzzDot(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34}, int16(3))
	f.Fuzz(func(t *testing.T, raw []byte, scale int16) {
		n := len(raw) / 2
		a, b := make([]float32, n), make([]float32, n)
		for i := range n {
			a[i] = float32(int8(raw[i])) * float32(scale) / 64
			b[i] = float32(int8(raw[n+i])) / 16
		}
		checkDot(t, a, b)
	})
}
