package vecindex

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func randomUnit(rng *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	var n float64
	for i := range v {
		v[i] = float32(rng.NormFloat64())
		n += float64(v[i]) * float64(v[i])
	}
	for i := range v {
		v[i] /= float32(math.Sqrt(n))
	}
	return v
}

// Every approximate score is within the slack Scores reports of the exact
// float32 dot product, across dimensions and after replacements.
func TestScoresWithinSlack(t *testing.T) {
	for _, tc := range []struct {
		name string
		dim  int
		n    int
	}{
		{"dim8", 8, 200},
		{"dim13_odd", 13, 200},
		{"dim512", 512, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tc.dim)))
			var x Index
			exact := map[string][]float32{}
			for i := range tc.n {
				id := string(rune('a'+i%26)) + string(rune('0'+i/26))
				v := randomUnit(rng, tc.dim)
				x.Put(id, v)
				exact[id] = v
			}
			for range 10 {
				q := randomUnit(rng, tc.dim)
				scores, slack := x.Scores(q)
				for i, id := range x.IDs() {
					want := float64(Dot(q, exact[id]))
					if d := math.Abs(float64(scores[i]) - want); d > slack+1e-6 {
						t.Fatalf("item %s: approximate %v, exact %v: off by %v, slack %v", id, scores[i], want, d, slack)
					}
				}
			}
		})
	}
}

// Put replaces, Remove moves the last vector into the hole: ids, codes and
// scales stay in step.
func TestPutRemove(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 3))
	var x Index
	vecs := map[string][]float32{}
	for _, id := range []string{"a", "b", "c", "d"} {
		vecs[id] = randomUnit(rng, 16)
		x.Put(id, vecs[id])
	}
	vecs["b"] = randomUnit(rng, 16)
	x.Put("b", vecs["b"])
	x.Remove("a")
	x.Remove("zzz") // absent: nothing happens
	delete(vecs, "a")
	if x.Len() != 3 || x.Dim() != 16 {
		t.Fatalf("len %d dim %d, want 3 and 16", x.Len(), x.Dim())
	}
	for id, v := range vecs {
		q := v
		scores, slack := x.Scores(q)
		i := slices.Index(x.IDs(), id)
		if i < 0 {
			t.Fatalf("%s missing from %v", id, x.IDs())
		}
		if math.Abs(float64(scores[i])-1) > slack+1e-6 {
			t.Errorf("%s scored %v against itself, want 1 within %v", id, scores[i], slack)
		}
	}
	x.Reset()
	if x.Len() != 0 || x.Dim() != 0 {
		t.Errorf("after Reset: len %d dim %d", x.Len(), x.Dim())
	}
}

// A zero vector quantises to zeros with scale 0, never NaN.
func TestZeroVector(t *testing.T) {
	var x Index
	x.Put("z", make([]float32, 8))
	scores, _ := x.Scores([]float32{1, 1, 1, 1, 1, 1, 1, 1})
	if scores[0] != 0 {
		t.Errorf("score %v, want 0", scores[0])
	}
}

// Rescore orders by exact score, drops candidates without an exact vector
// and those under minScore, and keeps limit.
func TestRescore(t *testing.T) {
	q := []float32{1, 0}
	cands := []Scored{{0.9, "a"}, {0.8, "b"}, {0.7, "c"}, {0.6, "gone"}}
	exact := map[string][]float32{"a": {0.1, 0.99}, "b": {0.95, 0.3}, "c": {0.5, 0.8}}
	got := Rescore(q, cands, exact, 2, 0.2)
	want := []string{"b", "c"}
	if len(got) != 2 || got[0].ID != want[0] || got[1].ID != want[1] {
		t.Fatalf("Rescore = %v, want ids %v", got, want)
	}
}

// sparseUnit is a unit vector with only k nonzero components (some of them
// negative zero is not possible after scaling, so a few are set to -0 by
// hand), as the hashing embedder's queries are.
func sparseUnit(rng *rand.Rand, dim, k int) []float32 {
	v := make([]float32, dim)
	var n float64
	for range k {
		i := rng.IntN(dim)
		v[i] = float32(rng.NormFloat64())
		n += float64(v[i]) * float64(v[i])
	}
	for i := range v {
		if v[i] != 0 {
			v[i] /= float32(math.Sqrt(n))
		}
	}
	v[rng.IntN(dim)] = float32(math.Copysign(0, -1))
	return v
}

// The sparse scan (taken without a vector unit) sums the same integers as
// the dense one, so its scores are the same bit for bit, tails included.
func TestSparseScanEqualsDense(t *testing.T) {
	for _, tc := range []struct {
		name   string
		dim, k int
	}{
		{"dim512_k50", 512, 50},
		{"dim512_k1", 512, 1},
		{"dim13_k3_tail", 13, 3},
		{"dim8_k2", 8, 2},
		{"dim515_k60_tail", 515, 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, uint64(tc.dim*1000+tc.k)))
			var x Index
			for i := range 300 {
				x.Put(string(rune('a'+i%26))+string(rune('0'+i/26)), randomUnit(rng, tc.dim))
			}
			for range 20 {
				q := sparseUnit(rng, tc.dim, tc.k)
				pq := Prepare(q)
				nonzero := 0
				for _, c := range pq.codes {
					if c != 0 {
						nonzero++
					}
				}
				sq := sparseOf(pq.codes, nonzero)
				got, _ := x.Scores(q)
				for i := range x.ids {
					c := x.codes[i*tc.dim : (i+1)*tc.dim]
					if d, want := sq.dot(c), dotInt(pq.codes, c); d != want {
						t.Fatalf("vector %d: sparse dot %d, dense %d", i, d, want)
					}
					if want := pq.DotCodes(c) * x.scales[i]; math.Float32bits(got[i]) != math.Float32bits(want) {
						t.Fatalf("vector %d: Scores %v, DotCodes %v", i, got[i], want)
					}
				}
			}
		})
	}
}
