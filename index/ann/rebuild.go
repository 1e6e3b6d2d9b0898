package ann

import (
	"math/rand/v2"
	"sync"
)

// Re-clustering in the background. A write that makes the index due for
// (re-)clustering only starts a rebuild; searches and writes go on against
// the current lists meanwhile (a new vector goes to its nearest current
// list). The rebuild works on a private index: it samples the vectors and
// trains the centroids, then copies the vectors into the new lists batch by
// batch, holding the read lock only while it copies a batch's codes, never
// while it computes. Every id written, removed or moved within its list
// after the rebuild started is logged (rebuild.pending) and placed again
// from the current lists before the swap: in rounds off the write lock
// while the log is long, the rest under it, with the swap.

// rebuildBatch is how many vectors a rebuild copies per hold of the read
// lock: 1,024 codes of 512 bytes take well under a millisecond to copy.
const rebuildBatch = 1024

// swapPending is the log length from which a rebuild places the logged
// vectors in another round off the write lock rather than under it.
const swapPending = 256

type rebuild struct {
	gen     uint64              // the index's gen when it started
	pending map[string]struct{} // ids written, removed or moved since
	done    chan struct{}
}

// WithLock hands the index the lock its owner guards it with (held for
// writing around Put, PutCodes, Remove and Reset, for reading around
// searches), so that re-clustering runs in the background, off the write
// that triggers it, and takes the lock itself only briefly.
func WithLock(mu *sync.RWMutex) Option { return func(x *Index) { x.mu = mu } }

// Guard hands a built index the lock that guards it from now on (as
// WithLock) and its threshold, and starts a re-clustering if one is due.
// The caller holds mu for writing. A store that fills a private index with
// a threshold of 0 (exact, never clustering) and then publishes it uses it,
// so that the filling never stops to cluster.
func (x *Index) Guard(mu *sync.RWMutex, threshold int) {
	x.mu, x.threshold = mu, threshold
	x.maybeRecluster()
}

// Abandon drops a background re-clustering, if one runs, and leaves the
// lists as they are: for an owner replacing the index with another, so
// that the old one's rebuild stops at its next look instead of finishing
// for nothing. The caller holds the lock for writing.
func (x *Index) Abandon() { x.dropRebuild() }

// Rebuilding reports whether a re-clustering is running in the background.
// The caller holds the lock.
func (x *Index) Rebuilding() bool { return x.bg != nil }

// Wait returns when no re-clustering runs in the background (tests and
// benchmarks). The caller must not hold the lock.
func (x *Index) Wait() {
	for {
		if x.mu == nil {
			return
		}
		x.mu.RLock()
		bg := x.bg
		x.mu.RUnlock()
		if bg == nil {
			return
		}
		<-bg.done
	}
}

// startRecluster clusters now without a lock, and otherwise starts a
// rebuild in the background unless one runs. The caller holds the lock for
// writing.
func (x *Index) startRecluster() {
	if x.mu == nil {
		x.Recluster()
		return
	}
	if x.bg != nil {
		return
	}
	x.bg = &rebuild{gen: x.gen, pending: map[string]struct{}{}, done: make(chan struct{})}
	go x.rebuild(x.bg)
}

// dropRebuild abandons the running rebuild, if any: the lists it would
// replace are being replaced or emptied. The caller holds the lock for
// writing.
func (x *Index) dropRebuild() {
	x.gen++
	x.bg = nil
}

// rebuild re-clusters a copy of the index and swaps it in (see the top of
// this file).
func (x *Index) rebuild(bg *rebuild) {
	defer close(bg.done)
	// Sample while walking the vectors once: positions shift under
	// concurrent writes, which only makes the sample a little less uniform.
	x.mu.RLock()
	if x.gen != bg.gen {
		x.mu.RUnlock()
		return
	}
	n, dim := x.n, x.dim
	nx := &Index{threshold: x.threshold, probes: x.probes, fixed: x.fixed, seed: x.seed, dim: dim, shift: x.shift}
	nx.idOf = nx.listIDs()
	nx.restartPos(n)
	x.mu.RUnlock()
	if n == 0 {
		x.finish(bg, nil)
		return
	}
	nlist := ListsFor(n)
	rng := rand.New(rand.NewPCG(x.seed, uint64(n)))
	m := min(n, trainPerList*nlist)
	picks := make([]bool, n)
	for _, i := range rng.Perm(n)[:m] {
		picks[i] = true
	}
	sample := make([]float32, 0, m*dim)
	seen := 0
	if !x.walk(bg, func(l *list, lo, hi int) {
		for i := lo; i < hi && seen < n; i++ {
			if picks[seen] {
				sample = appendDecoded(sample, x.code(l, i), l.scales[i])
			}
			seen++
		}
	}) {
		return
	}
	if len(sample) == 0 {
		x.finish(bg, nil)
		return
	}
	nx.train(rng, sample, nlist)
	nx.trainedAt = n

	// Copy every vector into the new lists, a batch per hold of the lock.
	var (
		ids    []string
		codes  []int8
		scales []float32
	)
	if !x.walk(bg, func(l *list, lo, hi int) {
		ids, codes, scales = ids[:0], codes[:0], scales[:0]
		for i := lo; i < hi; i++ {
			ids = append(ids, x.idAt(l, i))
			codes = append(codes, x.code(l, i)...)
			scales = append(scales, l.scales[i])
		}
	}, func() {
		for j, id := range ids { // an id re-put during the walk can be met twice
			nx.remove(id)
			nx.place(id, codes[j*dim:(j+1)*dim], scales[j])
		}
	}) {
		return
	}
	// Place again what was written meanwhile, off the write lock while
	// there is much of it.
	for {
		x.mu.RLock()
		if x.gen != bg.gen {
			x.mu.RUnlock()
			return
		}
		if len(bg.pending) <= swapPending {
			x.mu.RUnlock()
			break
		}
		// Writers hold the lock for writing, so under the read lock the log
		// is this goroutine's alone.
		log := bg.pending
		bg.pending = map[string]struct{}{}
		ids, codes, scales = x.copyOut(log, ids[:0], codes[:0], scales[:0])
		x.mu.RUnlock()
		for id := range log {
			nx.remove(id)
		}
		for j, id := range ids {
			nx.place(id, codes[j*dim:(j+1)*dim], scales[j])
		}
	}
	if !nx.fixed {
		nx.calibrate(rng)
	}
	x.finish(bg, nx)
}

// copyOut appends the ids of log that are stored, with their codes and
// scales. The caller holds the lock.
func (x *Index) copyOut(log map[string]struct{}, ids []string, codes []int8, scales []float32) ([]string, []int8, []float32) {
	for id := range log {
		p, ok := x.where(id)
		if !ok {
			continue
		}
		l := &x.lists[p.list]
		ids = append(ids, id)
		codes = append(codes, x.code(l, int(p.i))...)
		scales = append(scales, l.scales[p.i])
	}
	return ids, codes, scales
}

// walk calls read with batches of at most rebuildBatch vectors of one list
// under the read lock, list after list, then after (if given) without the
// lock. It reports false if the rebuild was dropped meanwhile.
func (x *Index) walk(bg *rebuild, read func(l *list, lo, hi int), after ...func()) bool {
	for li, lo := 0, 0; ; {
		x.mu.RLock()
		if x.gen != bg.gen {
			x.mu.RUnlock()
			return false
		}
		for li < len(x.lists) && lo >= len(x.lists[li].names) {
			li, lo = li+1, 0
		}
		if li >= len(x.lists) {
			x.mu.RUnlock()
			return true
		}
		l := &x.lists[li]
		hi := min(lo+rebuildBatch, len(l.names))
		read(l, lo, hi)
		x.mu.RUnlock()
		for _, f := range after {
			f()
		}
		lo = hi
	}
}

// finish swaps the rebuilt lists in under the write lock, after placing
// the vectors logged since the last pass over the log; nx nil ends the rebuild without
// a swap.
func (x *Index) finish(bg *rebuild, nx *Index) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.gen != bg.gen {
		return
	}
	x.bg = nil
	if nx == nil {
		return
	}
	for id := range bg.pending {
		nx.remove(id)
		if p, ok := x.where(id); ok {
			l := &x.lists[p.list]
			nx.place(id, x.code(l, int(p.i)), l.scales[p.i])
		}
	}
	x.lists, x.ids, x.deadIDs, x.pos, x.n = nx.lists, nx.ids, nx.deadIDs, nx.pos, nx.n
	x.centroids, x.coarse, x.children, x.trainedAt = nx.centroids, nx.coarse, nx.children, nx.trainedAt
	if !x.fixed {
		x.probes = nx.probes
	}
	x.gen++
	x.changes++
	x.maybeRecluster() // the count may have doubled again meanwhile
}
