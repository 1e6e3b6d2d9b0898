package ann

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"

	"github.com/h4r/h4r/index/vecindex"
	"github.com/h4r/h4r/internal/idtable"
	"github.com/h4r/h4r/internal/names"
)

// Defaults: see PERFORMANCE.md for the measurements behind them.
const (
	// DefaultThreshold is the number of vectors from which the index
	// clusters them and searches approximately.
	DefaultThreshold = 50_000
	// DefaultProbes is how many lists a search for 200 candidates scans
	// (the stores rescore 2×100) until the first clustering calibrates
	// them (calibrate), or when WithProbes does not say; more candidates
	// scan proportionally more.
	DefaultProbes = 48
	// candidatesPerProbes is the candidate count DefaultProbes is tuned for.
	candidatesPerProbes = 200
	// trainPerList is how many sample vectors k-means sees per list.
	trainPerList = 40
	// trainRounds is the number of k-means rounds (each level).
	trainRounds = 8
	// chunkShift: a list keeps its codes in chunks of 1<<chunkShift
	// vectors (8 MiB at 512 dimensions), not one slice, so that growing
	// never copies them: a copy held the old and the new slice at once,
	// 512 and 640 MB at 1M vectors, and up to a quarter of the new one
	// stayed unused. Only a list's last chunk has room to spare. Chunks of
	// 2 MiB made the scan about a tenth slower (BenchmarkExactScan); 8 MiB
	// ones scan as fast as one slice.
	chunkShift = 14
)

// Index holds int8-quantised vectors of one dimension, keyed by id, as
// vecindex.Index does, and above a threshold partitions them into lists
// around k-means centroids (an inverted file, IVF) so that a search scans
// only the lists nearest the query. Below the threshold it is one list and
// every search is the exact scan. It is not safe for concurrent use: the
// stores guard it with their own lock, which they may hand it (WithLock)
// so that re-clustering runs in the background instead of in the write that
// triggers it. Make it with New.
type Index struct {
	threshold int
	probes    int
	fixed     bool // probes set by WithProbes: not calibrated
	seed      uint64

	dim      int
	n        int
	shift    int // chunkShift (tests make chunks small)
	lists    []list
	ids      names.List            // every id placed since the last compaction, by the number lists hold
	deadIDs  int                   // numbers of ids no list holds any longer (removed or replaced)
	pos      idtable.Table[uint64] // id → its loc (loc.ref), through the lists' ids
	idOf     func(uint64) string   // the id at a ref, for pos (listIDs, set once where an Index is made)
	maxScale float32
	changes  uint64 // counts writes, so a Ranker knows whether its ids are still the index's

	// scoreBufs holds score buffers (*[]float32) finished Rankers handed
	// back: at a million vectors a scan's scores are 4 MB, and allocating
	// them for every search made the collector run several times as often.
	scoreBufs sync.Pool

	// Set while clustered (centroids != nil): fine centroids, unit vectors,
	// one per list; coarse centroids group them (coarseOf[c] lists the fine
	// centroids under coarse centroid c) so that placing a vector compares
	// it with a few dozen centroids rather than all of them.
	centroids []float32
	coarse    []float32
	children  [][]int32
	trainedAt int // Len when last clustered

	// With a lock (WithLock, Guard) re-clustering runs in the background
	// (rebuild.go): bg is the one running, and gen changes whenever the
	// lists are replaced or emptied under it, which drops it.
	mu  *sync.RWMutex
	bg  *rebuild
	gen uint64
}

// list is one list's vectors: the numbers of their ids in Index.ids (an
// id held as a string each was an object per vector for the collector to
// mark at every collection, a million at a million items), their codes
// and their scales.
type list struct {
	names  []uint32
	codes  [][]int8 // chunks of 1<<Index.shift vectors; the last one may be partly full
	scales []float32
}

// code returns the codes of list l's vector i.
func (x *Index) code(l *list, i int) []int8 {
	off := (i & (1<<x.shift - 1)) * x.dim
	return l.codes[i>>x.shift][off : off+x.dim : off+x.dim]
}

// pushCode appends codes as list l's next vector, len(l.names); the
// caller then appends its id's number and scale.
func (x *Index) pushCode(l *list, codes []int8) {
	i := len(l.names)
	if i&(1<<x.shift-1) == 0 {
		var c []int8
		if i > 0 { // a list that filled a chunk will likely fill the next
			c = make([]int8, 0, x.dim<<x.shift)
		}
		l.codes = append(l.codes, c)
	}
	last := &l.codes[len(l.codes)-1]
	*last = append(*last, codes[:x.dim]...)
}

// dropLastCode removes the codes of list l's last vector, len(l.names)-1;
// the caller then drops its id's number and scale.
func (x *Index) dropLastCode(l *list) {
	i := len(l.names) - 1
	if i&(1<<x.shift-1) == 0 {
		l.codes[len(l.codes)-1] = nil
		l.codes = l.codes[:len(l.codes)-1]
		return
	}
	last := &l.codes[len(l.codes)-1]
	*last = (*last)[:(i&(1<<x.shift-1))*x.dim]
}

type loc struct{ list, i int32 }

// ref packs l into the number pos keeps.
func (l loc) ref() uint64 { return uint64(uint32(l.list))<<32 | uint64(uint32(l.i)) }

// listIDs returns the id at a ref of pos, as x's lists hold it then: pos
// keeps no strings of its own. It is made once per Index (New, rebuild),
// not at each use, so that searches reading pos under a shared lock never
// write x.
func (x *Index) listIDs() func(uint64) string {
	return func(r uint64) string { return x.ids.At(x.lists[r>>32].names[uint32(r)]) }
}

// idAt returns the id of list l's vector i. The string views x.ids's
// bytes, which are never changed: it stays valid after any write.
func (x *Index) idAt(l *list, i int) string { return x.ids.At(l.names[i]) }

// maybeCompactIDs copies the ids the lists hold into a new array once the
// dead ones (removed or replaced vectors') outnumber them, so that a store
// whose items are rewritten over and over keeps at most twice its ids; each
// copy follows as many removals as it moves ids (the rule of the embedded
// store's seqIDs). Strings handed out before stay valid: they view the old
// array.
func (x *Index) maybeCompactIDs() {
	if x.deadIDs <= x.n {
		return
	}
	var ids names.List
	ids.Grow(x.n)
	for li := range x.lists {
		l := &x.lists[li]
		for i, num := range l.names {
			l.names[i] = ids.Append(x.ids.At(num))
		}
	}
	x.ids, x.deadIDs = ids, 0
}

// where returns id's loc.
func (x *Index) where(id string) (loc, bool) {
	r, ok := x.pos.Get(id, x.idOf)
	return loc{int32(r >> 32), int32(uint32(r))}, ok
}

// restartPos empties pos, sized for n ids, for a caller that places every
// id again (merge, Recluster, a rebuild's new index).
func (x *Index) restartPos(n int) {
	x.pos = idtable.Table[uint64]{}
	x.pos.Grow(n, nil)
}

// Option configures an Index.
type Option func(*Index)

// WithThreshold sets the number of vectors from which searches are
// approximate; 0 means never.
func WithThreshold(n int) Option { return func(x *Index) { x.threshold = n } }

// WithProbes sets how many lists a search for 200 candidates scans.
// Without it the index calibrates them at each clustering (calibrate).
func WithProbes(p int) Option { return func(x *Index) { x.probes, x.fixed = max(1, p), true } }

// WithSeed sets the seed of the k-means sampling (tests).
func WithSeed(s uint64) Option { return func(x *Index) { x.seed = s } }

// New returns an empty index.
func New(opts ...Option) *Index {
	x := &Index{threshold: DefaultThreshold, probes: DefaultProbes, seed: 1, shift: chunkShift}
	x.idOf = x.listIDs()
	for _, o := range opts {
		o(x)
	}
	x.Reset()
	return x
}

// Reset empties the index and forgets its dimension.
func (x *Index) Reset() {
	x.dropRebuild()
	x.dim, x.n, x.maxScale = 0, 0, 0
	x.changes++
	x.lists = []list{{}}
	x.ids, x.deadIDs = names.List{}, 0
	x.pos = idtable.Table[uint64]{}
	x.centroids, x.coarse, x.children, x.trainedAt = nil, nil, nil, 0
}

// SetProbes sets how many lists a search for 200 candidates scans
// (WithProbes), for tuning on a built index.
func (x *Index) SetProbes(p int) { x.probes, x.fixed = max(1, p), true }

// Probes is how many lists a search for 200 candidates scans.
func (x *Index) Probes() int { return x.probes }

// Dim is the dimension of the stored vectors (0 while none was stored).
func (x *Index) Dim() int { return x.dim }

// Len is the number of stored vectors.
func (x *Index) Len() int { return x.n }

// Lists is the number of lists (1 below the threshold).
func (x *Index) Lists() int { return len(x.lists) }

// Approximate reports whether searches scan only some lists.
func (x *Index) Approximate() bool { return x.centroids != nil }

// Bytes is the memory the codes, scales and centroids take.
func (x *Index) Bytes() int {
	b := 4 * (cap(x.centroids) + cap(x.coarse))
	for _, l := range x.lists {
		for _, c := range l.codes {
			b += cap(c)
		}
		b += 4 * cap(l.scales)
	}
	return b
}

// Put stores vec (of the index's dimension; the first vector sets it) under
// id, replacing any vector id had.
func (x *Index) Put(id string, vec []float32) {
	codes, scale := vecindex.Quantize(vec)
	x.PutCodes(id, codes, scale)
}

// PutCodes stores codes already quantised (vecindex.Quantize) under id.
func (x *Index) PutCodes(id string, codes []int8, scale float32) {
	if x.dim == 0 {
		x.dim = len(codes)
	}
	x.remove(id)
	x.place(id, codes, scale)
	x.changes++
	x.maybeRecluster()
}

// place appends a vector not stored yet to its nearest list.
func (x *Index) place(id string, codes []int8, scale float32) {
	li := 0
	if x.centroids != nil {
		li = x.nearestList(codes, scale)
	}
	l := &x.lists[li]
	at := loc{int32(li), int32(len(l.names))}
	x.pushCode(l, codes)
	l.names = append(l.names, x.ids.Append(id))
	x.pos.Add(id, at.ref(), x.idOf) // id is absent: PutCodes removed it
	l.scales = append(l.scales, scale)
	x.maxScale = max(x.maxScale, scale)
	x.n++
	if x.bg != nil {
		x.bg.pending[id] = struct{}{}
	}
}

// Remove deletes id's vector, if any.
func (x *Index) Remove(id string) {
	if x.remove(id) {
		x.maybeRecluster()
	}
}

func (x *Index) remove(id string) bool {
	p, ok := x.where(id)
	if !ok {
		return false
	}
	l := &x.lists[p.list]
	i, last := int(p.i), len(l.names)-1
	if x.bg != nil {
		x.bg.pending[id] = struct{}{}
	}
	// Off pos while list l's vector i is still id's: pos finds an entry by
	// the id at its ref, and the move below puts another id there.
	x.pos.Delete(id, x.idOf)
	if i != last {
		moved := x.idAt(l, last)
		x.pos.Put(moved, p.ref(), x.idOf)
		l.names[i] = l.names[last]
		if x.bg != nil { // moved behind a running rebuild's walk: it may not see it there
			x.bg.pending[moved] = struct{}{}
		}
		copy(x.code(l, i), x.code(l, last))
		l.scales[i] = l.scales[last]
	}
	x.dropLastCode(l)
	l.names = l.names[:last]
	l.scales = l.scales[:last]
	x.n--
	x.deadIDs++
	x.changes++
	x.maybeCompactIDs()
	return true
}

// maybeRecluster clusters the vectors when they reach the threshold, again
// whenever they have doubled or halved since (so the cost is amortised over
// the writes and lists stay near their intended size), and merges them
// back into one list below half the threshold.
func (x *Index) maybeRecluster() {
	switch {
	case x.threshold <= 0:
	case x.centroids == nil && x.n >= x.threshold:
		x.startRecluster()
	case x.centroids != nil && x.n < x.threshold/2:
		x.merge()
	case x.centroids != nil && (x.n >= 2*x.trainedAt || 2*x.n < x.trainedAt):
		x.startRecluster()
	}
}

// merge puts every vector back into one list.
func (x *Index) merge() {
	x.dropRebuild()
	all := list{names: make([]uint32, 0, x.n), scales: make([]float32, 0, x.n)}
	for li := range x.lists {
		l := &x.lists[li]
		for i, num := range l.names {
			x.pushCode(&all, x.code(l, i))
			all.names = append(all.names, num)
		}
		all.scales = append(all.scales, l.scales...)
	}
	x.lists = []list{all}
	x.restartPos(len(all.names))
	for i, num := range all.names {
		x.pos.Add(x.ids.At(num), loc{0, int32(i)}.ref(), x.idOf)
	}
	x.centroids, x.coarse, x.children, x.trainedAt = nil, nil, nil, 0
}

// ListsFor is the number of lists for n vectors: about √n, so that the
// centroid scan and a list cost alike.
func ListsFor(n int) int { return max(1, int(math.Round(math.Sqrt(float64(n))))) }

// Recluster computes centroids for the vectors stored now (k-means on a
// sample, two levels) and redistributes the vectors among their lists, at
// once: a re-cluster running in the background is dropped.
func (x *Index) Recluster() {
	x.dropRebuild()
	if x.n == 0 {
		return
	}
	nlist := ListsFor(x.n)
	rng := rand.New(rand.NewPCG(x.seed, uint64(x.n)))
	sample := x.sample(rng, min(x.n, trainPerList*nlist))
	old := x.lists
	x.train(rng, sample, nlist)
	x.restartPos(x.n)
	x.trainedAt = x.n
	// Place every vector (in parallel: this is the costly part), then move them.
	type placed struct {
		li, i int
	}
	var where []placed
	for li, l := range old {
		for i := range l.names {
			where = append(where, placed{li, i})
		}
	}
	dest := make([]int32, len(where))
	parallel(len(where), func(lo, hi int) {
		for j := lo; j < hi; j++ {
			l := &old[where[j].li]
			i := where[j].i
			dest[j] = int32(x.nearestList(x.code(l, i), l.scales[i]))
		}
	})
	for j, w := range where {
		l := &old[w.li]
		nl := &x.lists[dest[j]]
		num := l.names[w.i]
		at := loc{dest[j], int32(len(nl.names))}
		x.pushCode(nl, x.code(l, w.i))
		nl.names = append(nl.names, num)
		x.pos.Add(x.ids.At(num), at.ref(), x.idOf)
		nl.scales = append(nl.scales, l.scales[w.i])
	}
	if !x.fixed {
		x.calibrate(rng)
	}
}

// train sets x's centroids from sample (two levels of k-means: coarse
// centroids, then about nlist fine ones spread among them by their share
// of the sample) and makes one empty list per fine centroid.
func (x *Index) train(rng *rand.Rand, sample []float32, nlist int) {
	d := x.dim
	ncoarse := max(1, int(math.Round(math.Sqrt(float64(nlist)))))
	coarse := kmeans(rng, sample, d, ncoarse)
	members := make([][]float32, ncoarse)
	for i, c := range assign(sample, d, coarse) {
		members[c] = append(members[c], sample[i*d:(i+1)*d]...)
	}
	var centroids []float32
	children := make([][]int32, ncoarse)
	ns := len(sample) / d
	for c, m := range members {
		k := max(1, int(math.Round(float64(nlist)*float64(len(m)/d)/float64(ns))))
		if len(m) == 0 {
			continue
		}
		for _, f := range chunks(kmeans(rng, m, d, min(k, len(m)/d)), d) {
			children[c] = append(children[c], int32(len(centroids)/d))
			centroids = append(centroids, f...)
		}
	}
	x.centroids, x.coarse, x.children = centroids, coarse, children
	x.lists = make([]list, len(centroids)/d)
}

// Calibration: how many stored vectors serve as queries, and the share of
// their exact top 100 the probed lists must hold.
const (
	calibrationQueries = 32
	calibrationTarget  = 0.99
	calibrationTop     = 100
)

// calibrate sets the probes to the fewest whose lists hold, on average,
// calibrationTarget of the exact (int8) top 100 of stored vectors used as
// queries. The target is above the 0.95 asked of searches because real
// queries are not stored vectors: on SciFact a target of 0.97 gave 0.94
// for its claims. How many lists a search must scan depends on how the vectors
// cluster: few for embeddings of topics, most of them for the built-in
// embedder's hashed words (PERFORMANCE.md), so a fixed count would either
// waste scans or lose recall.
func (x *Index) calibrate(rng *rand.Rand) {
	d, nl := x.dim, len(x.lists)
	qs := x.sample(rng, min(x.n, calibrationQueries))
	m := len(qs) / d
	if m == 0 {
		return
	}
	// found[p] counts top members whose list is the query's p-th nearest.
	found := make([]int, nl+1)
	total := 0
	for qi := range m {
		q := qs[qi*d : (qi+1)*d]
		sc, scores, _, _ := x.search(q, math.MaxInt, nil) // every list
		top := vecindex.TopOf(x.scanIDs(sc), scores, calibrationTop, math.Inf(-1))
		order := x.listOrder(q)
		rankOf := make([]int, nl)
		for r, li := range order {
			rankOf[li] = r
		}
		for _, t := range top {
			p, _ := x.where(t.ID)
			found[rankOf[p.list]]++
		}
		total += len(top)
	}
	have := 0
	for p := range nl {
		have += found[p]
		if float64(have) >= calibrationTarget*float64(total) {
			x.probes = p + 1
			return
		}
	}
	x.probes = nl
}

// listOrder is the lists by their centroid's similarity to q, nearest first.
func (x *Index) listOrder(q []float32) []int {
	d := x.dim
	sim := make([]float32, len(x.lists))
	order := make([]int, len(x.lists))
	for c := range x.lists {
		sim[c] = vecindex.Dot(q, x.centroids[c*d:(c+1)*d])
		order[c] = c
	}
	slices.SortFunc(order, func(a, b int) int {
		switch {
		case sim[a] > sim[b]:
			return -1
		case sim[a] < sim[b]:
			return 1
		}
		return a - b
	})
	return order
}

// sample returns m stored vectors, decoded, drawn without replacement.
func (x *Index) sample(rng *rand.Rand, m int) []float32 {
	picks := rng.Perm(x.n)[:m]
	slices.Sort(picks)
	out := make([]float32, 0, m*x.dim)
	k, seen := 0, 0
	for li := range x.lists {
		l := &x.lists[li]
		for i := range l.names {
			if k < len(picks) && picks[k] == seen {
				out = appendDecoded(out, x.code(l, i), l.scales[i])
				k++
			}
			seen++
		}
	}
	return out
}

func appendDecoded(dst []float32, codes []int8, scale float32) []float32 {
	for _, c := range codes {
		dst = append(dst, float32(c)*scale)
	}
	return dst
}

// placeAmong is how many nearest coarse centroids placing a vector looks
// under: with one, vectors near a coarse boundary land in lists far from
// their true nearest centroid, which searches (that rank every fine
// centroid) then miss.
const placeAmong = 3

// nearestList is the list of the fine centroid nearest the vector, among
// the children of its placeAmong nearest coarse centroids.
func (x *Index) nearestList(codes []int8, _ float32) int { // a positive scale does not change which centroid is nearest
	d := x.dim
	var top [placeAmong]int
	var topS [placeAmong]float32
	for i := range topS {
		top[i], topS[i] = -1, float32(math.Inf(-1))
	}
	for c := range len(x.coarse) / d {
		s := dotCentroid(x.coarse[c*d:(c+1)*d], codes)
		for i := range top { // insertion into the few best so far
			if s > topS[i] {
				copy(top[i+1:], top[i:placeAmong-1])
				copy(topS[i+1:], topS[i:placeAmong-1])
				top[i], topS[i] = c, s
				break
			}
		}
	}
	best, bestS := int32(0), float32(math.Inf(-1))
	for _, c := range top {
		if c < 0 {
			break
		}
		for _, f := range x.children[c] {
			if s := dotCentroid(x.centroids[int(f)*d:int(f+1)*d], codes); s > bestS {
				best, bestS = f, s
			}
		}
	}
	return int(best)
}

func dotCentroid(c []float32, codes []int8) float32 { return vecindex.DotCodes(c, codes) }

// kmeans returns k unit centroids of the m vectors in data (spherical
// k-means: nearest by dot product), starting from k random vectors.
func kmeans(rng *rand.Rand, data []float32, d, k int) []float32 {
	m := len(data) / d
	k = max(1, min(k, m))
	cent := make([]float32, 0, k*d)
	for _, i := range rng.Perm(m)[:k] {
		cent = append(cent, data[i*d:(i+1)*d]...)
	}
	normalize(cent, d)
	sums := make([]float64, k*d)
	counts := make([]int, k)
	for range trainRounds {
		of := assign(data, d, cent)
		clear(sums)
		clear(counts)
		for i, c := range of {
			counts[c]++
			for j, v := range data[i*d : (i+1)*d] {
				sums[int(c)*d+j] += float64(v)
			}
		}
		for c := range k {
			if counts[c] == 0 { // reseed an empty cluster with a random vector
				copy(cent[c*d:(c+1)*d], data[rng.IntN(m)*d:])
				continue
			}
			for j := range d {
				cent[c*d+j] = float32(sums[c*d+j])
			}
		}
		normalize(cent, d)
	}
	return cent
}

// assign returns the nearest centroid of each vector in data.
func assign(data []float32, d int, cent []float32) []int32 {
	m, k := len(data)/d, len(cent)/d
	of := make([]int32, m)
	parallel(m, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			v := data[i*d : (i+1)*d]
			best, bestS := 0, float32(math.Inf(-1))
			for c := range k {
				if s := vecindex.Dot(v, cent[c*d:(c+1)*d]); s > bestS {
					best, bestS = c, s
				}
			}
			of[i] = int32(best)
		}
	})
	return of
}

func normalize(vs []float32, d int) {
	for c := range len(vs) / d {
		v := vs[c*d : (c+1)*d]
		var s float64
		for _, x := range v {
			s += float64(x) * float64(x)
		}
		if s == 0 {
			continue
		}
		inv := float32(1 / math.Sqrt(s))
		for j := range v {
			v[j] *= inv
		}
	}
}

func chunks(vs []float32, d int) [][]float32 {
	out := make([][]float32, 0, len(vs)/d)
	for i := 0; i+d <= len(vs); i += d {
		out = append(out, vs[i:i+d])
	}
	return out
}

// parallel runs f over [0, n) split among the CPUs.
func parallel(n int, f func(lo, hi int)) {
	w := min(runtime.GOMAXPROCS(0), max(1, n/256))
	if w <= 1 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	step := (n + w - 1) / w
	for lo := 0; lo < n; lo += step {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			f(lo, hi)
		}(lo, min(n, lo+step))
	}
	wg.Wait()
}

// probesFor is how many lists a search for n candidates scans.
func (x *Index) probesFor(n int) int {
	if n >= x.n {
		return len(x.lists)
	}
	return x.probes * max(1, (n+candidatesPerProbes-1)/candidatesPerProbes)
}

// Search returns the ids and approximate scores (int8 codes, as
// vecindex.Index.Scores) of the vectors a search for the best n candidates
// scans, the most a score can be off from the exact dot product, and
// whether the scan covered every vector (below the threshold, or when n
// asks for as many lists as there are). Approximate or not, a caller takes
// the best n of them (vecindex.Top) and rescores those exactly.
func (x *Index) Search(q []float32, n int) (ids []string, scores []float32, slack float64, exact bool) {
	sc, scores, slack, exact := x.search(q, n, nil)
	idAt := x.scanIDs(sc)
	ids = make([]string, len(scores))
	for i := range ids {
		ids[i] = idAt(i)
	}
	return ids, scores, slack, exact
}

// scan is the order a search scored vectors in: whole lists, one after
// another. It names lists, not ids, so that a search copies no id: the
// few it returns are read through scanIDs. The zero scan is list 0 alone,
// an unclustered index's scan, which then allocates nothing.
type scan struct {
	lists []int32
	ends  []int // ends[j]: the count of scores up to the end of lists[j]
}

// scanIDs returns the id of each score of a scan, valid while the index
// is unchanged. The caller holds the lock.
func (x *Index) scanIDs(sc scan) func(i int) string {
	if sc.lists == nil {
		return func(i int) string { return x.idAt(&x.lists[0], i) }
	}
	return func(i int) string {
		j, _ := slices.BinarySearch(sc.ends, i+1) // the first list ending past i
		start := 0
		if j > 0 {
			start = sc.ends[j-1]
		}
		return x.idAt(&x.lists[sc.lists[j]], i-start)
	}
}

// search is Search with the scores appended to buf[:0] (a Ranker's
// buffer, so that a large scan does not allocate its scores every time);
// nil allocates. The scores are in the order of the scan's lists.
func (x *Index) search(q []float32, n int, buf []float32) (sc scan, scores []float32, slack float64, exact bool) {
	pq := vecindex.Prepare(q)
	slack = pq.Slack(x.maxScale)
	d := x.dim
	if len(q) != d { // none stored, or a query of another dimension (the stores check first)
		return scan{}, nil, slack, true
	}
	exact = x.centroids == nil || x.probesFor(n) >= len(x.lists)
	if len(x.lists) == 1 {
		return scan{}, x.scoreList(pq, 0, buf[:0]), slack, exact // scoreList sizes the scores
	}
	var lists []int32
	if exact {
		lists = make([]int32, len(x.lists))
		for li := range lists {
			lists[li] = int32(li)
		}
	} else {
		probes := x.listOrder(q)[:x.probesFor(n)]
		lists = make([]int32, len(probes))
		for j, li := range probes {
			lists[j] = int32(li)
		}
	}
	size := 0
	for _, li := range lists {
		size += len(x.lists[li].names)
	}
	sc = scan{lists: lists, ends: make([]int, len(lists))}
	scores = slices.Grow(buf[:0], size)
	for j, li := range lists {
		scores = x.scoreList(pq, int(li), scores)
		sc.ends[j] = len(scores)
	}
	return sc, scores, slack, exact
}

// parallelScanMin is the list length from which scoreList splits its scan
// among the CPUs, so that a lone request on a large store waits half as
// long on two; below it the goroutines cost more than they save.
const parallelScanMin = 1 << 16

// scoreList appends the approximate scores of list li's vectors to scores.
func (x *Index) scoreList(q vecindex.Query, li int, scores []float32) []float32 {
	l := &x.lists[li]
	at := len(scores)
	scores = slices.Grow(scores, len(l.names))[:at+len(l.names)]
	d, mask := x.dim, 1<<x.shift-1
	score := func(lo, hi int) {
		for i := lo; i < hi; { // chunk by chunk
			c, off := l.codes[i>>x.shift], (i&mask)*d
			end := min(hi, (i|mask)+1)
			q.ScoreCodes(scores[at+i:at+end], c[off:off+(end-i)*d], l.scales[i:end])
			i = end
		}
	}
	if len(l.names) < parallelScanMin {
		score(0, len(l.names))
	} else {
		parallel(len(l.names), score)
	}
	return scores
}
