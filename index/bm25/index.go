package bm25

import (
	"encoding/binary"
	"iter"
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
	fwdOff []uint32 // the document's distinct term ids, ascending, are fwd[fwdOff[s]:fwdOff[s+1]]
	fwd    []byte   // term id gaps as uvarints (appendTerms): 2 bytes a term, not 4

	// slotOf maps the caller's id to 1 + the slot of its live version (0:
	// none). It is a paged array indexed by id: the caller's ids are row
	// numbers, which run nearly densely from 1 (internal/paged).
	slotOf paged.Array[uint32]
	sumLen uint64 // total length of the live documents
	dead   int    // dead slots

	refAvg float64 // the average length the block maxima were computed at (0: none yet)

	stemMu sync.Mutex
	stems  stemCache // for Prepare
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
	return &Index{vocab: map[string]uint32{}, fwdOff: []uint32{0}, stems: stemCache{}}
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
	var all []string
	eachTerm(text, cache, func(t string) { all = append(all, t) })
	slices.Sort(all)
	d := Doc{length: uint32(min(len(all), math.MaxUint32))}
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
	docs := make([]Doc, len(texts))
	workers := min(runtime.GOMAXPROCS(0), max(1, len(texts)/256))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			cache := stemCache{}
			for i := w; i < len(texts); i += workers {
				docs[i] = prepare(texts[i], cache)
			}
		})
	}
	wg.Wait()
	return docs
}

// Add indexes text under id, replacing the document id had.
func (x *Index) Add(id uint32, text string) error { return x.Put(id, x.Prepare(text)) }

// Put indexes d under id, replacing the document id had.
func (x *Index) Put(id uint32, d Doc) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	// Slots and the forward lists' offsets are uint32.
	full := func() bool {
		return len(x.ids) >= math.MaxUint32-1 || uint64(len(x.fwd))+uint64(binary.MaxVarintLen32*len(d.terms)) > math.MaxUint32
	}
	if full() {
		x.compact()
		if full() {
			return h4r.Errorf(h4r.EEXHAUSTED, "", "the full-text index holds %d documents and %d bytes of term lists, its limit", len(x.ids), len(x.fwd))
		}
	}
	if old := x.slotOf.Get(id); old != 0 {
		x.kill(old - 1)
	}
	slot := uint32(len(x.ids))
	x.ids = append(x.ids, id)
	x.length = append(x.length, d.length)
	x.live = append(x.live, true)
	x.slotOf.Set(id, slot+1)
	x.sumLen += uint64(d.length)
	if x.refAvg == 0 && x.sumLen > 0 {
		x.refAvg = x.avg()
	}
	a, bb := normParams(x.refAvg)
	tids := make([]uint32, 0, len(d.terms))
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
		tids = append(tids, tid)
	}
	slices.Sort(tids)
	x.fwd = appendTerms(x.fwd, tids)
	x.fwdOff = append(x.fwdOff, uint32(len(x.fwd)))
	x.maintain()
	return nil
}

// appendTerms appends ascending term ids to fwd as the uvarints of their
// gaps (the first from 0).
func appendTerms(fwd []byte, tids []uint32) []byte {
	prev := uint32(0)
	for _, tid := range tids {
		fwd = binary.AppendUvarint(fwd, uint64(tid-prev))
		prev = tid
	}
	return fwd
}

// terms yields the distinct term ids of slot's document, ascending.
func (x *Index) terms(slot uint32) iter.Seq[uint32] {
	return func(yield func(uint32) bool) {
		b := x.fwd[x.fwdOff[slot]:x.fwdOff[slot+1]]
		tid := uint32(0)
		for len(b) > 0 {
			gap, n := binary.Uvarint(b)
			b = b[n:]
			tid += uint32(gap)
			if !yield(tid) {
				return
			}
		}
	}
}

// Delete removes id's document; it reports whether there was one.
func (x *Index) Delete(id uint32) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	slot := x.slotOf.Get(id)
	if slot == 0 {
		return false
	}
	x.kill(slot - 1)
	x.maintain()
	return true
}

// kill marks a live slot dead and takes it out of the statistics; its
// postings stay until compact.
func (x *Index) kill(slot uint32) {
	x.live[slot] = false
	for tid := range x.terms(slot) {
		x.lists[tid].df--
	}
	x.sumLen -= uint64(x.length[slot])
	x.slotOf.Delete(x.ids[slot])
	x.dead++
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
	fwdOff := make([]uint32, 1, n+1)
	var fwd []byte
	var tids []uint32
	for s, alive := range x.live {
		if !alive {
			continue
		}
		ids = append(ids, x.ids[s])
		length = append(length, x.length[s])
		tids = tids[:0]
		for tid := range x.terms(uint32(s)) { // kept terms keep their order
			tids = append(tids, newTid[tid])
		}
		fwd = appendTerms(fwd, tids)
		fwdOff = append(fwdOff, uint32(len(fwd)))
	}
	for s, id := range ids { // the live documents, in their new slots
		x.slotOf.Set(id, uint32(s)+1)
	}
	x.vocab, x.names, x.lists = vocab, names, lists
	x.ids, x.length, x.fwdOff, x.fwd = ids, length, fwdOff, fwd
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
