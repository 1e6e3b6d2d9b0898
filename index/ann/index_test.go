package ann_test

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/h4r/h4r/index/ann"
	"github.com/h4r/h4r/index/vecindex"
)

func unit(v []float32) []float32 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	n := float32(1 / math.Sqrt(s))
	for i := range v {
		v[i] *= n
	}
	return v
}

// corpus makes unit vectors of dim around centres random centres: vector i
// is a centre plus Gaussian noise of the centre's norm (cosine about 0.5
// within a cluster, 0 across, like text embeddings of topics), drawn from
// its own seed so that a million can be streamed rather than held. The
// coder/hnsw evaluation in PERFORMANCE.md draws from the same distribution.
type corpus struct {
	seed    uint64
	dim     int
	centres [][]float32
}

func newCorpus(seed uint64, dim, centres int) *corpus {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	c := &corpus{seed: seed, dim: dim, centres: make([][]float32, centres)}
	for i := range c.centres {
		c.centres[i] = make([]float32, dim)
		for j := range c.centres[i] {
			c.centres[i][j] = float32(rng.NormFloat64())
		}
		unit(c.centres[i])
	}
	return c
}

func (c *corpus) vector(i int) []float32 {
	rng := rand.New(rand.NewPCG(c.seed^0x9e3779b97f4a7c15, uint64(i)))
	centre := c.centres[rng.IntN(len(c.centres))]
	sigma := 1.0 / math.Sqrt(float64(c.dim))
	v := make([]float32, c.dim)
	for j := range v {
		v[j] = centre[j] + float32(sigma*rng.NormFloat64())
	}
	return unit(v)
}

// clustered returns vectors 0…n-1 of a corpus.
func clustered(seed uint64, n, dim, centres int) [][]float32 {
	c := newCorpus(seed, dim, centres)
	out := make([][]float32, n)
	for i := range out {
		out[i] = c.vector(i)
	}
	return out
}

// searchTop is what a store does: the best 2×limit candidates of Search,
// rescored with the exact vectors.
func searchTop(x *ann.Index, q []float32, exact map[string][]float32, limit int) []vecindex.Scored {
	want := vecindex.Candidates(limit)
	ids, scores, slack, _ := x.Search(q, want)
	cands := vecindex.Top(ids, scores, want, -1-slack)
	return vecindex.Rescore(q, cands, exact, limit, -1)
}

// exactTop is the exhaustive float32 ranking.
func exactTop(q []float32, exact map[string][]float32, limit int) []vecindex.Scored {
	all := make([]vecindex.Scored, 0, len(exact))
	for id, v := range exact {
		all = append(all, vecindex.Scored{Score: float64(vecindex.Dot(q, v)), ID: id})
	}
	vecindex.Sort(all)
	return all[:min(limit, len(all))]
}

func overlap(got, want []vecindex.Scored) float64 {
	in := map[string]bool{}
	for _, w := range want {
		in[w.ID] = true
	}
	same := 0
	for _, g := range got {
		if in[g.ID] {
			same++
		}
	}
	return float64(same) / float64(len(want))
}

func idOf(i int) string { return fmt.Sprintf("item-%07d", i) }

// Below the threshold Search is the exact scan: the same candidates, in
// the same order, with the same scores as vecindex.Index (the scan it
// replaces), after puts, replacements and deletes.
func TestSearchBelowThresholdIsTheExactScan(t *testing.T) {
	for _, tc := range []struct {
		name      string
		threshold int
		n         int
		opts      []ann.Option
	}{
		{"default_threshold", ann.DefaultThreshold, 3000, nil},
		{"never_approximate", 0, 3000, nil},
		{"just_below", 3001, 3000, nil},
		{"chunks of 32 vectors", 0, 3000, []ann.Option{ann.WithChunkShift(5)}},
		{"chunks of 1 vector", 0, 300, []ann.Option{ann.WithChunkShift(0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vecs := clustered(3, tc.n+20, 64, 30)
			x := ann.New(append(tc.opts, ann.WithThreshold(tc.threshold))...)
			var ref vecindex.Index
			for i := range tc.n {
				x.Put(idOf(i), vecs[i])
				ref.Put(idOf(i), vecs[i])
			}
			for i := 0; i < tc.n; i += 7 { // deletes
				x.Remove(idOf(i))
				ref.Remove(idOf(i))
			}
			for i := 1; i < tc.n; i += 11 { // replacements
				x.Put(idOf(i), vecs[tc.n+i%20])
				ref.Put(idOf(i), vecs[tc.n+i%20])
			}
			if x.Approximate() || x.Len() != ref.Len() {
				t.Fatalf("approximate %v, %d vectors, want exact with %d", x.Approximate(), x.Len(), ref.Len())
			}
			for qi, q := range vecs[tc.n:] {
				ids, scores, slack, exact := x.Search(q, 200)
				if !exact {
					t.Fatal("search below the threshold not exact")
				}
				rs, rslack := ref.Scores(q)
				if slack != rslack {
					t.Errorf("query %d: slack %v, exact scan %v", qi, slack, rslack)
				}
				got, want := vecindex.Top(ids, scores, 200, -1), vecindex.Top(ref.IDs(), rs, 200, -1)
				if !slices.Equal(got, want) {
					t.Fatalf("query %d: top 200 differs from the exact scan's", qi)
				}
			}
		})
	}
}

// A list long enough to be scanned on every CPU gives the scores of the
// one-core scan, in the same order, for dense and sparse queries.
func TestParallelScanEqualsSequential(t *testing.T) {
	const dim = 32
	n := ann.ParallelScanMin + 1001 // uneven chunks
	rng := rand.New(rand.NewPCG(21, 22))
	x := ann.New(ann.WithThreshold(0))
	var ref vecindex.Index
	for i := range n {
		v := make([]float32, dim)
		for j := range v {
			v[j] = float32(rng.NormFloat64())
		}
		x.Put(idOf(i), v)
		ref.Put(idOf(i), v)
	}
	for qi, nonzero := range []int{dim, dim / 8} {
		q := make([]float32, dim)
		for j := range nonzero {
			q[(j*7)%dim] = float32(rng.NormFloat64())
		}
		ids, scores, _, _ := x.Search(q, 200)
		want, _ := ref.Scores(q)
		if !slices.Equal(ids, ref.IDs()) {
			t.Fatalf("query %d: ids differ from the one-core scan's", qi)
		}
		for i := range want {
			if math.Float32bits(scores[i]) != math.Float32bits(want[i]) {
				t.Fatalf("query %d, vector %d: score %v, one-core scan %v", qi, i, scores[i], want[i])
			}
		}
	}
}

// Queries of the hashing embedder are sparse (about a tenth of their
// components nonzero); without a vector unit Search scans them over those
// components only. Either way every score must equal, bit for bit, the
// prepared query's score of the codes the vectors quantise to, vector by
// vector.
func TestSearchSparseQueryEqualsDenseLoop(t *testing.T) {
	const n, dim = 2000, 512
	vecs := clustered(11, n, dim, 20)
	x := ann.New(ann.WithThreshold(0))
	dense := map[string]func(q []float32) float32{}
	for i, v := range vecs {
		x.Put(idOf(i), v)
		codes, scale := vecindex.Quantize(v)
		dense[idOf(i)] = func(q []float32) float32 { return vecindex.Prepare(q).DotCodes(codes) * scale }
	}
	rng := rand.New(rand.NewPCG(12, 13))
	for qi := range 20 {
		q := make([]float32, dim)
		for range dim / 10 {
			q[rng.IntN(dim)] = float32(rng.NormFloat64())
		}
		ids, scores, _, exact := x.Search(q, 200)
		if !exact || len(ids) != n {
			t.Fatalf("query %d: exact %v over %d vectors, want the exact scan of %d", qi, exact, len(ids), n)
		}
		for i, id := range ids {
			if want := dense[id](q); math.Float32bits(scores[i]) != math.Float32bits(want) {
				t.Fatalf("query %d, %s: score %v, dense loop %v", qi, id, scores[i], want)
			}
		}
	}
}

// Above the threshold, the rescored top 100 shares at least 0.95 of the
// exact float32 top 100 on clustered vectors (the 100k set is
// BenchmarkSearch).
func TestRecallAboveThreshold(t *testing.T) {
	const n, dim = 20_000, 256
	vecs := clustered(5, n+50, dim, n/100)
	x := ann.New(ann.WithThreshold(5_000))
	exact := map[string][]float32{}
	for i := range n {
		x.Put(idOf(i), vecs[i])
		exact[idOf(i)] = vecs[i]
	}
	if !x.Approximate() {
		t.Fatal("not approximate above the threshold")
	}
	var recall float64
	scanned := 0
	for _, q := range vecs[n:] {
		recall += overlap(searchTop(x, q, exact, 100), exactTop(q, exact, 100))
		ids, _, _, _ := x.Search(q, 200)
		scanned += len(ids)
	}
	recall /= 50
	t.Logf("%d vectors in %d lists: recall@100 %.4f, scanning %.1f%% of the vectors", n, x.Lists(), recall, 100*float64(scanned)/50/n)
	if recall < 0.95 {
		t.Errorf("recall@100 %.4f, want ≥ 0.95", recall)
	}
}

// An update moves a vector (the old neighbourhood no longer finds it, the
// new one does) and a delete removes it, while clustered; clustering,
// reclustering on growth and merging on shrinkage keep every vector.
func TestUpdatesAndDeletesAreReflected(t *testing.T) {
	for _, shift := range []int{14, 3} { // the default chunks, and chunks of 8 vectors
		t.Run(fmt.Sprintf("chunks of %d vectors", 1<<shift), func(t *testing.T) { testUpdatesAndDeletes(t, ann.WithChunkShift(shift)) })
	}
}

func testUpdatesAndDeletes(t *testing.T, chunks ann.Option) {
	const dim = 64
	vecs := clustered(9, 4000, dim, 40)
	x := ann.New(ann.WithThreshold(1000), ann.WithProbes(4), chunks)
	exact := map[string][]float32{}
	for i := range 1000 {
		x.Put(idOf(i), vecs[i])
		exact[idOf(i)] = vecs[i]
	}
	if !x.Approximate() {
		t.Fatal("not clustered at the threshold")
	}
	lists := x.Lists()
	find := func(q []float32, id string) bool {
		for _, h := range searchTop(x, q, exact, 10) {
			if h.ID == id {
				return true
			}
		}
		return false
	}
	const target = "moving"
	a, b := vecs[3000], vecs[3001]
	x.Put(target, a)
	exact[target] = a
	if !find(a, target) {
		t.Fatal("a new vector is not found by its own query")
	}
	x.Put(target, b)
	exact[target] = b
	if !find(b, target) {
		t.Error("an updated vector is not found by its new query")
	}
	ids, _, _, _ := x.Search(a, 20)
	if slices.Contains(ids, target) && vecindex.Dot(a, b) < 0.5 {
		t.Error("an updated vector is still scanned where its old value was")
	}
	x.Remove(target)
	delete(exact, target)
	if ids, _, _, _ := x.Search(b, 2000); slices.Contains(ids, target) {
		t.Error("a deleted vector is still found")
	}
	for i := 1000; i < 2500; i++ { // grows past 2× the clustered size: reclusters
		x.Put(idOf(i), vecs[i])
	}
	if x.Lists() == lists || x.Len() != 2500 {
		t.Errorf("after growth: %d lists (was %d), %d vectors (want 2500)", x.Lists(), lists, x.Len())
	}
	for i := range 2500 {
		if i%6 != 0 {
			x.Remove(idOf(i))
		}
	}
	if x.Approximate() || x.Len() != 417 {
		t.Fatalf("below half the threshold: approximate %v, %d vectors (want exact, 417)", x.Approximate(), x.Len())
	}
	ids, _, _, _ = x.Search(vecs[0], 100)
	got := slices.Sorted(slices.Values(ids))
	var want []string
	for i := 0; i < 2500; i += 6 {
		want = append(want, idOf(i))
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("after merging, the scan holds %d ids, want the %d kept", len(got), len(want))
	}
}

// The index keeps its ids by number in one array and copies the live ones
// into a new array once the dead ones (replaced or removed vectors')
// outnumber them. Through rounds of rewrites and removals, clustered or
// not, every id is found at its place (Check), a full scan returns exactly
// the ids stored, the array never holds much more than twice the live ids,
// and ids a search returned before a compaction keep their text.
func TestIDsStayRightThroughRewrites(t *testing.T) {
	for _, tc := range []struct {
		name      string
		threshold int
	}{
		{"clustered", 2000},
		{"one list", 0},
	} {
		t.Run(tc.name, func(t *testing.T) { testIDsThroughRewrites(t, tc.threshold) })
	}
}

func testIDsThroughRewrites(t *testing.T, threshold int) {
	const n, dim = 3000, 16
	vecs := clustered(5, 2*n, dim, 20)
	x := ann.New(ann.WithThreshold(threshold), ann.WithChunkShift(3))
	stored := map[string]bool{}
	for i := range n {
		x.Put(idOf(i), vecs[i])
		stored[idOf(i)] = true
	}
	early, _, _, _ := x.Search(vecs[0], math.MaxInt)
	kept := make([]string, len(early)) // the same text, in bytes of their own
	for i, id := range early {
		kept[i] = strings.Clone(id)
	}
	compactions, held := 0, x.IDsHeld()
	for round := range 6 {
		for i := range n {
			switch {
			case round%3 == 2 && i%4 == 0:
				x.Remove(idOf(i))
				delete(stored, idOf(i))
			default:
				x.Put(idOf(i), vecs[(i+round*7)%len(vecs)])
				stored[idOf(i)] = true
			}
		}
		if err := x.Check(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if x.IDsHeld() < held {
			compactions++
		}
		held = x.IDsHeld()
		if limit := 2 * x.Len(); held > limit {
			t.Fatalf("round %d: %d ids held for %d vectors, more than %d", round, held, x.Len(), limit)
		}
		ids, _, _, _ := x.Search(vecs[1], math.MaxInt)
		got := slices.Sorted(slices.Values(ids))
		want := slices.Sorted(maps.Keys(stored))
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: a full scan returns %d ids, want the %d stored", round, len(got), len(want))
		}
	}
	if compactions == 0 {
		t.Fatal("the ids were never compacted: the test does not reach what it checks")
	}
	if x.Approximate() != (threshold > 0) {
		t.Fatalf("approximate %v with threshold %d: the case is not the one named", x.Approximate(), threshold)
	}
	if !slices.Equal(early, kept) {
		t.Fatal("ids returned before a compaction changed their text")
	}
}
