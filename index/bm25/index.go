package bm25

import (
	"encoding/binary"
	"hash/maphash"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/internal/paged"
)

// BM25's parameters (Robertson's k1 and b, the values Lucene and FTS5 use)
// and the size of the posting blocks that carry an upper bound each.
const (
	k1        = 1.2
	b         = 0.75
	blockSize = 128
)

// drift is how far (as a ratio) the average document length may move from
// the one the block bounds were computed at before they are recomputed:
// the bounds stay valid at any average (see bound), they only loosen.
const drift = 1.1

// Index is an in-memory inverted index for BM25 top-k search. It is safe
// for concurrent use: searches share a read lock, writes take the write
// lock. A write holds it for the few microseconds of appending one
// document's postings (analysis happens before, in Prepare); a search holds
// the read lock for its whole walk, well under a millisecond at 100k
// documents. Immutable segments with merges would let writes proceed
// during a search, at the price of walking several segments per term and a
// merge policy; at these sizes and write rates the lock is the simpler,
// cheaper choice.
//
// Documents are known by the caller's uint32 id (the store's row id). Inside,
// each version of a document gets the next slot, so that posting lists only
// ever grow at their end and stay sorted without insertion; a replaced or
// deleted document leaves a dead slot, skipped by searches and removed when
// a quarter of the slots are dead (compact).
//
// The index does not keep each document's terms: at a million documents
// those lists took 45 MB, to serve deletes only. Deleting a document lowers
// its terms' document frequencies, so the caller gives the analysis of the
// text it removes (Delete), as it gave the analysis of the text it added;
// a store has that text in its row. Each slot keeps a 64-bit fingerprint
// of its document's analysis, and Delete refuses an analysis that is not
// the one indexed, so a caller's mistake is an error, never a wrong
// frequency.
//
// Postings keep the raw term frequency; document lengths are kept per slot.
// A score is computed at query time from the current document count,
// document frequencies and average length, so it is always the exact BM25
// of the live documents, whatever was written since. Each block of 128
// postings carries the maximum of its length-normalised term frequencies
// at a reference average length; bound turns that into an upper bound valid
// at any other average.
type Index struct {
	mu sync.RWMutex

	vocab map[string]uint32 // term → term id
	names []string          // term id → term
	lists []postings        // term id → postings

	// Per slot.
	ids    []uint32 // the caller's id
	length []uint32 // terms in the document, repeats counted
	live   []bool
	sums   []uint64 // the fingerprint of the document's analysis (Doc.sum)

	// slotOf maps the caller's id to 1 + the slot of its live version (0:
	// none). It is a paged array indexed by id: the caller's ids are row
	// numbers, which run nearly densely from 1 (internal/paged).
	slotOf paged.Array[uint32]
	sumLen uint64 // total length of the live documents
	dead   int    // dead slots

	refAvg float64 // the average length the block maxima were computed at (0: none yet)

	stemMu sync.Mutex
	stems  stemCache // for Prepare

	seed maphash.Seed // of the fingerprints
}

// postings are one term's documents in slot order.
type postings struct {
	docs slotList  // slots, ascending
	tfs  tfList    // term frequency in each
	maxF []float64 // per block: the largest tfNorm of its postings at Index.refAvg
	last []uint32  // per block: its last slot
	top  float64   // the largest of maxF
	df   int       // live documents holding the term
}

// tfList holds term frequencies, one byte each: at 1M documents the
// postings' frequencies took 4 bytes × some 35M postings, and nearly every
// frequency is below 255. A frequency of 255 or more is stored as 255 with
// the real value in big, under its position.
type tfList struct {
	small []uint8
	big   map[int]uint32
}

// at returns the frequency of posting j.
func (t *tfList) at(j int) uint32 {
	if f := t.small[j]; f != math.MaxUint8 {
		return uint32(f)
	}
	return t.big[j]
}

func (t *tfList) add(f uint32) {
	if f >= math.MaxUint8 {
		if t.big == nil {
			t.big = map[int]uint32{}
		}
		t.big[len(t.small)] = f
		f = math.MaxUint8
	}
	t.small = append(t.small, uint8(f))
}

// blockEnd returns the index just past block bl's last posting.
func (p *postings) blockEnd(bl int) int { return min((bl+1)*blockSize, p.docs.len()) }

// New returns an empty index.
func New() *Index {
	return &Index{vocab: map[string]uint32{}, stems: stemCache{}, seed: maphash.MakeSeed()}
}

// Doc is a text analysed for the index: its distinct terms, sorted, with
// their frequencies. Prepare makes one; it is separate from Put so that
// analysis, the costly part of a write, runs outside the lock and, for a
// rebuild, on every core.
type Doc struct {
	terms  []string
	tfs    []uint32
	length uint32
}

// Prepare analyses text (as Analyze does) into a Doc. It is safe for
// concurrent use and remembers stems across calls.
func (x *Index) Prepare(text string) Doc {
	x.stemMu.Lock()
	defer x.stemMu.Unlock()
	return prepare(text, x.stems)
}

func prepare(text string, cache stemCache) Doc {
	d, _ := prepareInto(nil, text, cache)
	return d
}

// prepareInto is prepare with the text's terms collected in buf, which it
// returns for the next text: a rebuild analyses a million texts, and
// growing a new slice for each was a quarter of the garbage of loading.
func prepareInto(buf []string, text string, cache stemCache) (Doc, []string) {
	all := buf[:0]
	eachTerm(text, cache, func(t string) { all = append(all, t) })
	return docOf(all), all
}

// docOf counts a text's terms, which it sorts in place, into a Doc whose
// slices are allocated once, at their length.
func docOf(all []string) Doc {
	slices.Sort(all)
	distinct := 0
	for i, t := range all {
		if i == 0 || all[i-1] != t {
			distinct++
		}
	}
	d := Doc{length: uint32(min(len(all), math.MaxUint32)), terms: make([]string, 0, distinct), tfs: make([]uint32, 0, distinct)}
	for i, t := range all {
		if i > 0 && all[i-1] == t {
			d.tfs[len(d.tfs)-1]++
			continue
		}
		d.terms = append(d.terms, t)
		d.tfs = append(d.tfs, 1)
	}
	return d
}

// PrepareAll prepares texts on every core: a rebuild's analysis. Each
// worker keeps stems of its own, so that they do not contend for a lock.
func PrepareAll(texts []string) []Doc {
	var p Preparer
	return p.PrepareAll(texts)
}

// Preparer prepares batches of texts on every core, as PrepareAll does,
// each worker keeping its stems and its buffer from one batch to the next:
// a rebuild analyses its texts a batch at a time, and a fresh memory of
// stems for each batch stemmed the common words again in every batch (at
// a million texts, growing those memories was most of the garbage of
// loading). Its zero value is ready; it is not safe for concurrent use.
type Preparer struct {
	caches []stemCache
	bufs   [][]string
}

// PrepareAll prepares texts.
func (p *Preparer) PrepareAll(texts []string) []Doc {
	docs := make([]Doc, len(texts))
	workers := prepareWorkers(len(texts))
	for len(p.caches) < workers {
		p.caches = append(p.caches, stemCache{})
		p.bufs = append(p.bufs, nil)
	}
	onWorkers(workers, len(texts), func(w int, each func(func(i int))) {
		cache, buf := p.caches[w], p.bufs[w]
		each(func(i int) { docs[i], buf = prepareInto(buf, texts[i], cache) })
		p.bufs[w] = buf
	})
	return docs
}

// prepareWorkers is how many goroutines analyse n texts: every core, but
// no fewer than 256 texts each.
func prepareWorkers(n int) int { return min(runtime.GOMAXPROCS(0), max(1, n/256)) }

// onWorkers runs work on workers goroutines and waits for them; worker w's
// each calls its argument with every index of n that is w modulo workers.
func onWorkers(workers, n int, work func(w int, each func(func(i int)))) {
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			work(w, func(f func(i int)) {
				for i := w; i < n; i += workers {
					f(i)
				}
			})
		})
	}
	wg.Wait()
}

// sum returns the fingerprint of d's analysis: its terms, their
// frequencies and its length.
func (d *Doc) sum(seed maphash.Seed) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	var n [8]byte
	for i, t := range d.terms {
		binary.LittleEndian.PutUint32(n[:4], uint32(len(t)))
		binary.LittleEndian.PutUint32(n[4:], d.tfs[i])
		h.Write(n[:])
		h.WriteString(t)
	}
	binary.LittleEndian.PutUint32(n[:4], d.length)
	h.Write(n[:4])
	return h.Sum64()
}

// PrepareAll is the package's PrepareAll with the stems looked up in s and
// those it lacks added to it: for the writes of a store, whose texts share
// most of their words with the texts written before them, where PrepareAll
// stems every word of each batch afresh.
func (s *Stems) PrepareAll(texts []string) []Doc {
	docs := make([]Doc, len(texts))
	onWorkers(prepareWorkers(len(texts)), len(texts), func(_ int, each func(func(i int))) {
		var terms []string
		each(func(i int) {
			terms = s.Analyze(terms[:0], texts[i])
			docs[i] = docOf(terms)
		})
	})
	return docs
}

// Add indexes text under id, which must hold no document.
func (x *Index) Add(id uint32, text string) error { return x.Put(id, x.Prepare(text)) }

// Remove deletes id's document, indexed from text (see Delete).
func (x *Index) Remove(id uint32, text string) (bool, error) { return x.Delete(id, x.Prepare(text)) }

// Put indexes d under id, which must hold no document: to replace one,
// Delete it first.
func (x *Index) Put(id uint32, d Doc) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.slotOf.Get(id) != 0 {
		return h4r.Errorf(h4r.EINVALID, "", "the full-text index holds a document %d already: delete it, with the analysis of its text, before putting another", id)
	}
	// Slots are uint32.
	if len(x.ids) >= math.MaxUint32-1 {
		x.compact()
		if len(x.ids) >= math.MaxUint32-1 {
			return h4r.Errorf(h4r.EEXHAUSTED, "", "the full-text index holds %d documents, its limit", len(x.ids))
		}
	}
	slot := uint32(len(x.ids))
	x.ids = append(x.ids, id)
	x.length = append(x.length, d.length)
	x.live = append(x.live, true)
	x.sums = append(x.sums, d.sum(x.seed))
	x.slotOf.Set(id, slot+1)
	x.sumLen += uint64(d.length)
	if x.refAvg == 0 && x.sumLen > 0 {
		x.refAvg = x.avg()
	}
	a, bb := normParams(x.refAvg)
	for i, t := range d.terms {
		tid, ok := x.vocab[t]
		if !ok {
			t = strings.Clone(t) // a term may be a piece of a document's text
			tid = uint32(len(x.lists))
			x.vocab[t] = tid
			x.names = append(x.names, t)
			x.lists = append(x.lists, postings{})
		}
		p := &x.lists[tid]
		f := tfNorm(d.tfs[i], d.length, a, bb)
		if p.docs.len()%blockSize == 0 {
			p.maxF = append(p.maxF, f)
			p.last = append(p.last, slot)
		} else {
			bl := len(p.maxF) - 1
			p.maxF[bl] = max(p.maxF[bl], f)
			p.last[bl] = slot
		}
		p.top = max(p.top, f)
		p.docs.push(slot)
		p.tfs.add(d.tfs[i])
		p.df++
	}
	x.maintain()
	return nil
}

// Delete removes id's document, whose text's analysis (Prepare) is was,
// and reports whether there was one. When was is not the analysis the
// document was indexed with, it changes nothing and returns an error.
func (x *Index) Delete(id uint32, was Doc) (bool, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	slot := x.slotOf.Get(id)
	if slot == 0 {
		return false, nil
	}
	if err := x.kill(slot-1, &was); err != nil {
		return false, err
	}
	x.maintain()
	return true, nil
}

// kill marks a live slot dead and takes it out of the statistics, given
// its document's analysis; its postings stay until compact.
func (x *Index) kill(slot uint32, was *Doc) error {
	if x.sums[slot] != was.sum(x.seed) {
		return h4r.Errorf(h4r.EINVALID, "", "the text given for deleting document %d of the full-text index is not the text it was indexed with", x.ids[slot])
	}
	for _, t := range was.terms { // all in vocab: the fingerprint matched
		x.lists[x.vocab[t]].df--
	}
	x.live[slot] = false
	x.sumLen -= uint64(x.length[slot])
	x.slotOf.Delete(x.ids[slot])
	x.dead++
	return nil
}

// Len returns the number of live documents.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.slotOf.Len()
}

// Stats describes the index's size, for tests and benchmarks.
type Stats struct {
	Docs, DeadSlots, Terms, Postings, Blocks int
}

// Stats returns the index's size.
func (x *Index) Stats() Stats {
	x.mu.RLock()
	defer x.mu.RUnlock()
	s := Stats{Docs: x.slotOf.Len(), DeadSlots: x.dead, Terms: len(x.vocab)}
	for i := range x.lists {
		s.Postings += x.lists[i].docs.len()
		s.Blocks += len(x.lists[i].maxF)
	}
	return s
}

// avg returns the average length of the live documents (0 when none).
func (x *Index) avg() float64 {
	if x.slotOf.Len() == 0 {
		return 0
	}
	return float64(x.sumLen) / float64(x.slotOf.Len())
}

// maintain runs after every write: it compacts when a quarter of the slots
// are dead (so the cost is amortised over those writes), and recomputes the
// block maxima when the average length has drifted from their reference.
func (x *Index) maintain() {
	if x.dead > 0 && 4*x.dead > len(x.ids) {
		x.compact()
		return
	}
	if avg := x.avg(); avg > 0 && (avg > x.refAvg*drift || avg*drift < x.refAvg) {
		x.summarize()
	}
}

// summarize recomputes every block's maximum at the current average length.
func (x *Index) summarize() {
	x.refAvg = x.avg()
	a, bb := normParams(x.refAvg)
	for i := range x.lists {
		p := &x.lists[i]
		p.top = 0
		docs := p.docs.reader()
		for bl := range p.maxF {
			m := 0.0
			for j := bl * blockSize; j < p.blockEnd(bl); j++ {
				m = max(m, tfNorm(p.tfs.at(j), x.length[docs.at(j)], a, bb))
			}
			p.maxF[bl] = m
			p.top = max(p.top, m)
		}
	}
}

// compact drops the dead slots, their postings and the terms no live
// document holds, renumbering slots in order (so lists stay sorted), then
// recomputes the block maxima.
func (x *Index) compact() {
	newSlot := make([]uint32, len(x.ids))
	n := 0
	for s, alive := range x.live {
		if alive {
			newSlot[s] = uint32(n)
			n++
		}
	}
	// Terms: keep those with live documents, in their old order.
	newTid := make([]uint32, len(x.lists))
	var names []string
	var lists []postings
	vocab := make(map[string]uint32, len(x.vocab))
	for tid := range x.lists {
		old := &x.lists[tid]
		if old.df == 0 {
			continue
		}
		newTid[tid] = uint32(len(lists))
		vocab[x.names[tid]] = uint32(len(lists))
		names = append(names, x.names[tid])
		p := postings{tfs: tfList{small: make([]uint8, 0, old.df)}, df: old.df}
		docs := old.docs.reader()
		for j := range old.docs.len() {
			if s := docs.at(j); x.live[s] {
				p.docs.push(newSlot[s])
				p.tfs.add(old.tfs.at(j))
			}
		}
		nb := (p.docs.len() + blockSize - 1) / blockSize
		p.maxF = make([]float64, nb)
		p.last = make([]uint32, nb)
		docs = p.docs.reader()
		for bl := range nb {
			p.last[bl] = docs.at(p.blockEnd(bl) - 1)
		}
		lists = append(lists, p)
	}
	ids := make([]uint32, 0, n)
	length := make([]uint32, 0, n)
	sums := make([]uint64, 0, n)
	for s, alive := range x.live {
		if !alive {
			continue
		}
		ids = append(ids, x.ids[s])
		length = append(length, x.length[s])
		sums = append(sums, x.sums[s])
	}
	for s, id := range ids { // the live documents, in their new slots
		x.slotOf.Set(id, uint32(s)+1)
	}
	x.vocab, x.names, x.lists = vocab, names, lists
	x.ids, x.length, x.sums = ids, length, sums
	x.live = make([]bool, n)
	for i := range x.live {
		x.live[i] = true
	}
	x.dead = 0
	x.summarize()
}

// normParams returns the two constants of a document length's
// normalisation at average length avg: K(len) = a + bb·len.
func normParams(avg float64) (a, bb float64) {
	if avg == 0 {
		return k1 * (1 - b), 0
	}
	return k1 * (1 - b), k1 * b / avg
}

// tfNorm is BM25's saturating, length-normalised term frequency,
// tf / (tf + k1·(1 − b + b·len/avg)), with a and bb from normParams. The
// float64 conversions forbid fusing the multiply-add (the Go spec allows
// it, per call site), so that every path computes the same bits.
func tfNorm(tf, length uint32, a, bb float64) float64 {
	k := a + float64(bb*float64(length))
	return float64(tf) / float64(float64(tf)+k)
}

// idf is Lucene's BM25 idf, ln(1 + (N − df + 0.5)/(df + 0.5)), positive for
// every df ≤ N (FTS5's variant goes negative for terms in over half the
// documents and is clamped).
func idf(n, df int) float64 {
	return math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
}
