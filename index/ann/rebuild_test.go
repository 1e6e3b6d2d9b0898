package ann_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/h4r/h4r/index/ann"
	"github.com/h4r/h4r/index/vecindex"
)

// While a re-clustering runs in the background, writers put new vectors,
// replace and remove old ones, and searchers search; afterwards the index
// holds exactly what was last written under every id (codes and scale),
// its bookkeeping is whole, and it has clustered again for its new size.
func TestBackgroundReclusterKeepsEveryWrite(t *testing.T) {
	for _, tc := range []struct {
		name  string
		chunk int
	}{
		{"default chunks", 14},
		{"chunks of 8 vectors", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const dim, n = 32, 3000
			vecs := clustered(13, 3*n, dim, 60)
			var mu sync.RWMutex
			x := ann.New(ann.WithThreshold(n/2), ann.WithLock(&mu), ann.WithChunkShift(tc.chunk), ann.WithSeed(3))
			want := map[string][]float32{}
			put := func(id string, v []float32) {
				mu.Lock()
				x.Put(id, v)
				mu.Unlock()
				want[id] = v
			}
			for i := range n {
				put(idOf(i), vecs[i])
			}
			// Searches run throughout, each under the read lock.
			stop := make(chan struct{})
			var searches atomic.Int64
			var wg sync.WaitGroup
			for s := range 2 {
				wg.Go(func() {
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						mu.RLock()
						ids, scores, _, _ := x.Search(vecs[(s*7919+i)%n], 200)
						if len(ids) != len(scores) {
							t.Errorf("search: %d ids, %d scores", len(ids), len(scores))
						}
						mu.RUnlock()
						searches.Add(1)
						time.Sleep(50 * time.Microsecond) // let the writer in: a spinning reader starves it on two cores
					}
				})
			}
			rng := rand.New(rand.NewPCG(5, 6))
			sawRebuild := false
			for i := n; i < 3*n; i++ { // doubles: at least one re-clustering starts
				put(idOf(i), vecs[i])
				switch j := rng.IntN(i); rng.IntN(4) {
				case 0: // replace
					put(idOf(j), vecs[rng.IntN(3*n)])
				case 1: // remove
					mu.Lock()
					x.Remove(idOf(j))
					mu.Unlock()
					delete(want, idOf(j))
				}
				mu.RLock()
				sawRebuild = sawRebuild || x.Rebuilding()
				mu.RUnlock()
			}
			x.Wait()
			close(stop)
			wg.Wait()
			if !sawRebuild {
				t.Fatal("no re-clustering ran in the background")
			}
			mu.Lock()
			defer mu.Unlock()
			if err := x.Check(); err != nil {
				t.Fatal(err)
			}
			if x.Len() != len(want) || !x.Approximate() {
				t.Fatalf("%d vectors (want %d), approximate %v", x.Len(), len(want), x.Approximate())
			}
			if got, min := x.Lists(), ann.ListsFor(len(want)/2); got < min {
				t.Errorf("%d lists for %d vectors: not re-clustered for the new size (at least %d)", got, len(want), min)
			}
			for id, v := range want {
				codes, scale, ok := x.Codes(id)
				wc, ws := vecindex.Quantize(v)
				if !ok || scale != ws || !slices.Equal(codes, wc) {
					t.Fatalf("id %s: stored %v (scale %v), want its last write (scale %v)", id, ok, scale, ws)
				}
			}
			t.Logf("%d searches ran meanwhile; %d lists", searches.Load(), x.Lists())
		})
	}
}

// Reset during a background re-clustering drops it: the emptied index is
// not refilled by the swap.
func TestResetDropsTheBackgroundRecluster(t *testing.T) {
	const dim, n = 32, 20_000
	vecs := clustered(17, n, dim, 100)
	var mu sync.RWMutex
	x := ann.New(ann.WithThreshold(n/2), ann.WithLock(&mu))
	mu.Lock()
	for i := range n {
		x.Put(idOf(i), vecs[i])
	}
	running := x.Rebuilding()
	x.Reset()
	x.Put("only", vecs[0])
	mu.Unlock()
	x.Wait()
	mu.Lock()
	defer mu.Unlock()
	if !running {
		t.Fatal("no re-clustering was running to drop")
	}
	if err := x.Check(); err != nil {
		t.Fatal(err)
	}
	if x.Len() != 1 || x.Approximate() {
		t.Errorf("after Reset: %d vectors, approximate %v (want 1, exact)", x.Len(), x.Approximate())
	}
}

// At 100,000 clustered vectors, grown through two background
// re-clusterings while searches ran, the calibrated inverted file keeps at
// least 0.95 of the exact top 100.
func TestRecallAfterBackgroundGrowth(t *testing.T) {
	const dim, queries = 128, 30
	n := 100_000
	if raceEnabled {
		n = 20_000
	}
	c := newCorpus(21, dim, n/100)
	var mu sync.RWMutex
	x := ann.New(ann.WithThreshold(n/2), ann.WithLock(&mu))
	exact := make(map[string][]float32, n)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		q := c.vector(n + 1)
		for {
			select {
			case <-stop:
				return
			default:
			}
			mu.RLock()
			x.Search(q, 200)
			mu.RUnlock()
			time.Sleep(time.Millisecond)
		}
	})
	for i := range n {
		v := c.vector(i)
		mu.Lock()
		x.Put(idOf(i), v)
		mu.Unlock()
		exact[idOf(i)] = v
	}
	x.Wait()
	close(stop)
	wg.Wait()
	if !x.Approximate() || x.Lists() < ann.ListsFor(n)/2 {
		t.Fatalf("%d lists, approximate %v: not clustered for %d vectors", x.Lists(), x.Approximate(), n)
	}
	var recall float64
	scanned := 0
	for qi := range queries {
		q := c.vector(n + 10 + qi)
		recall += overlap(searchTop(x, q, exact, 100), exactTop(q, exact, 100))
		ids, _, _, _ := x.Search(q, 200)
		scanned += len(ids)
	}
	recall /= queries
	t.Logf("%d vectors in %d lists, %d probes: recall@100 %.4f, scanning %.1f%%", n, x.Lists(), x.Probes(), recall, 100*float64(scanned)/queries/float64(n))
	if recall < 0.95 {
		t.Errorf("recall@100 %.4f, want ≥ 0.95", recall)
	}
}

// BenchmarkReclusterPause measures the longest wait a search or a write
// sees while the index re-clusters on doubling (from n/2 to n vectors of
// 512 dimensions), with two searchers and one writer running throughout:
// mode=stop-the-world clusters inside the write that triggers it, under the
// owner's write lock (the index without WithLock); mode=background hands
// the index the lock (WithLock). Each iteration is one whole re-clustering.
// max-put-hold-ms is the longest a Put held the write lock: the wait it
// imposes on every other search and write, apart from the machine's load
// (the waits themselves include the searches in progress, which a loaded
// machine stretches).
//
//	nice go test ./index/ann -run '^$' -bench ReclusterPause -benchtime 1x
//	H4R_ANN_BENCH_SIZES=1000000 … (the same, at a million)
func BenchmarkReclusterPause(b *testing.B) {
	const dim = 512
	for _, n := range benchSizes(b) {
		c := newCorpus(1, dim, n/100)
		for _, mode := range []string{"stop-the-world", "background"} {
			b.Run(fmt.Sprintf("n=%d/mode=%s", n, mode), func(b *testing.B) {
				for b.Loop() {
					reclusterPause(b, c, n, mode == "background")
				}
			})
		}
	}
}

func reclusterPause(b *testing.B, c *corpus, n int, background bool) {
	var mu sync.RWMutex
	opts := []ann.Option{ann.WithThreshold(n / 2)}
	if background {
		opts = append(opts, ann.WithLock(&mu))
	}
	x := ann.New(opts...)
	half := n / 2
	mu.Lock()
	for i := range half - 1 {
		x.Put(idOf(i), c.vector(i))
	}
	x.Put(idOf(half-1), c.vector(half-1)) // clusters at n/2
	mu.Unlock()
	x.Wait()
	mu.Lock()
	for i := half; i < n-1; i++ {
		x.Put(idOf(i), c.vector(i))
	}
	mu.Unlock()
	// One writer crosses n (triggering the re-clustering) and goes on; two
	// searchers search. Every operation's wall time is recorded.
	var (
		stop               = make(chan struct{})
		wg                 sync.WaitGroup
		recMu              sync.Mutex
		searchMs, writeMs  []float64
		holdMs             []float64 // a Put's time holding the write lock: what it makes others wait
		reclusterStarted   = make(chan struct{})
		reclusterStartOnce sync.Once
	)
	record := func(dst *[]float64, ms float64) {
		recMu.Lock()
		*dst = append(*dst, ms)
		recMu.Unlock()
	}
	for s := range 2 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				q := c.vector(n + 1000 + (s*97+i)%1000)
				t0 := time.Now()
				mu.RLock()
				ids, scores, slack, _ := x.Search(q, 200)
				vecindex.Top(ids, scores, 200, -1-slack)
				mu.RUnlock()
				record(&searchMs, float64(time.Since(t0).Microseconds())/1000)
			}
		})
	}
	wg.Go(func() {
		for i := n - 1; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			v := c.vector(i)
			t0 := time.Now()
			mu.Lock()
			t1 := time.Now()
			x.Put(idOf(i), v)
			hold := float64(time.Since(t1).Microseconds()) / 1000
			mu.Unlock()
			record(&writeMs, float64(time.Since(t0).Microseconds())/1000)
			record(&holdMs, hold)
			if i == n-1 {
				reclusterStartOnce.Do(func() { close(reclusterStarted) })
			}
		}
	})
	<-reclusterStarted
	x.Wait()
	close(stop)
	wg.Wait()
	b.ReportMetric(slices.Max(searchMs), "max-search-ms")
	b.ReportMetric(slices.Max(writeMs), "max-write-ms")
	b.ReportMetric(slices.Max(holdMs), "max-put-hold-ms")
	b.ReportMetric(quantile(searchMs, 0.5), "p50-search-ms")
	b.ReportMetric(quantile(searchMs, 0.99), "p99-search-ms")
	b.ReportMetric(quantile(writeMs, 0.99), "p99-write-ms")
	b.ReportMetric(float64(len(searchMs)), "searches")
	b.ReportMetric(float64(len(writeMs)), "writes")
}

func quantile(ms []float64, q float64) float64 {
	s := slices.Sorted(slices.Values(ms))
	return s[min(len(s)-1, int(math.Ceil(q*float64(len(s))))-1)]
}

// Abandon stops a running rebuild without touching the lists: searches of
// the abandoned index still see every vector, exactly.
func TestAbandonKeepsTheLists(t *testing.T) {
	const dim, n = 32, 20_000
	vecs := clustered(19, n, dim, 100)
	var mu sync.RWMutex
	x := ann.New(ann.WithThreshold(n/2), ann.WithLock(&mu))
	mu.Lock()
	for i := range n {
		x.Put(idOf(i), vecs[i])
	}
	running := x.Rebuilding()
	x.Abandon()
	mu.Unlock()
	x.Wait()
	mu.RLock()
	defer mu.RUnlock()
	if !running || x.Rebuilding() {
		t.Fatalf("rebuilding before Abandon %v, after %v: want true, false", running, x.Rebuilding())
	}
	if err := x.Check(); err != nil {
		t.Fatal(err)
	}
	if ids, _, _, exact := x.Search(vecs[0], n); len(ids) != n || !exact || x.Approximate() {
		t.Errorf("after Abandon: %d ids scanned (exact %v, approximate %v), want all %d, exact", len(ids), exact, x.Approximate(), n)
	}
}
