package bm25

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/h4r/h4r"
)

// Hit is one document found: the caller's id and its BM25 score.
type Hit struct {
	ID    uint32
	Score float64
}

// Algorithm chooses how Search walks the postings. All of them return the
// same hits, scores and order (TestAlgorithmsEqualReference).
type Algorithm int

const (
	// MaxScore (Turtle & Flood, 1995) in windows of slots, as Lucene's
	// MaxScoreBulkScorer does: in each window the terms whose block
	// bounds together cannot reach the k-th score are non-essential; the
	// others are scored term at a time into the window, and the
	// non-essential ones only complete the documents that can still
	// enter. The default: the fastest here (PERFORMANCE.md).
	MaxScore Algorithm = iota
	// BlockMaxWAND (Ding & Suel, 2011) moves a pivot along the documents
	// one at a time and skips every run of documents whose block bounds
	// cannot reach the k-th score.
	BlockMaxWAND
	// Exhaustive scores every live match (term at a time) and keeps the
	// best k: what pruning is measured against.
	Exhaustive
)

func (a Algorithm) String() string {
	switch a {
	case BlockMaxWAND:
		return "block-max-wand"
	case MaxScore:
		return "maxscore"
	case Exhaustive:
		return "exhaustive"
	}
	return fmt.Sprintf("Algorithm(%d)", int(a))
}

// SearchOptions are Search's optional settings. The zero value searches
// with MaxScore, accepts every document and breaks ties by id.
type SearchOptions struct {
	Algorithm Algorithm
	// Accept, when set, is the filter: the hits are the top k among the
	// documents it accepts. It is called with the caller's id, while the
	// index is read-locked, only for documents whose score would enter
	// the current top k; it must not call back into the index.
	Accept func(id uint32) bool
	// Tie orders documents of equal score (negative: a first), e.g. by
	// the store's external id. It must be a strict order on distinct
	// ids; where it returns 0 for distinct ids the smaller id comes
	// first. Nil means by id.
	Tie func(a, b uint32) int
}

// Scores are sums of fixed-point contributions: each term's score in a
// document is rounded to a multiple of 2⁻³² (far below any difference that
// matters to a ranking) and added as an integer. Integer sums do not depend
// on the order of their terms, so every algorithm (each adds a document's
// terms in its own order) and Reference compute the very same score, and
// equal scores are true ties, broken by the caller's order.
const unit = 1 << 32

// quantize turns a term's score into fixed point.
func quantize(score float64) int64 { return int64(score*unit + 0.5) }

// below reports whether documents whose score is at most bound (a sum of
// float bounds of nTerms terms, in score units) can be skipped: they cannot
// beat or tie the k-th score theta. The bound is widened by a relative 10⁻⁹
// for the rounding of float sums and by one fixed-point unit per term for
// quantization, so that a document that would tie is never skipped.
func below(bound float64, nTerms int, theta float64) bool {
	return bound*(1+1e-9)+float64(nTerms)/unit < theta
}

// end is the document "after the last" of an exhausted cursor.
const end = math.MaxUint32

// window is the span of slots maxScore scores at a time. Windows that
// start at 256 slots and double (so that the k-th score is known sooner)
// measured no different (PERFORMANCE.md).
const window = 4096

// Search returns the top k documents for the query terms (a term → query
// frequency map, as Query makes), best first: score descending, then
// the Tie order. A document's score is the sum over the query terms it
// holds of qtf · idf · tf·(k1+1)/(tf + k1·(1 − b + b·len/avglen)), over
// the live documents' statistics; Lucene's idf. Terms the index does not
// hold are ignored. The result is exactly Reference's, whatever the
// algorithm.
func (x *Index) Search(ctx context.Context, terms map[string]int, k int, o SearchOptions) ([]Hit, error) {
	if k < 0 {
		return nil, h4r.Errorf(h4r.EINVALID, "limit", "limit must not be negative, got %d", k)
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	s, err := x.newSearcher(ctx, terms, k, o)
	if err != nil || s == nil {
		return nil, err
	}
	switch o.Algorithm {
	case BlockMaxWAND:
		err = s.wand()
	case MaxScore:
		err = s.maxScore()
	case Exhaustive:
		err = s.exhaustive()
	default:
		return nil, h4r.Errorf(h4r.EINVALID, "algorithm", "unknown algorithm %d", int(o.Algorithm))
	}
	if err != nil {
		return nil, fmt.Errorf("searching the full-text index: %w", err)
	}
	return s.top.hits(), nil
}

// searcher is one search's state; it lives under the read lock.
type searcher struct {
	ctx    context.Context
	x      *Index
	a, bb  float64 // normParams at the current average length
	cs     []*cursor
	top    topK
	accept func(uint32) bool
}

// cursor walks one query term's postings. It copies the slices it reads,
// reads the slots a block at a time (blockReader) and keeps the current
// document, to spare the walk an indirection.
type cursor struct {
	docs blockReader
	tfs  tfList
	maxF []float64
	last []uint32
	n    int     // postings
	cur  uint32  // docs.at(pos), or end once exhausted
	pos  int     // current posting
	blk  int     // the block the last bound came from, ≥ pos's block
	w    float64 // qtf · idf · (k1+1): a posting's score is w·tfNorm
	ubW  float64 // w · scale: a block's bound is ubW · its maxF
	ub   float64 // the bound of every posting of the term, ubW · top
	wub  float64 // maxScore: the bound in the current window
}

// queryTerm is a query term the index holds, with its weight.
type queryTerm struct {
	p *postings
	w float64
}

// weigh validates the query and returns the terms that live documents
// hold, each with its weight qtf · idf · (k1+1).
func (x *Index) weigh(terms map[string]int) ([]queryTerm, error) {
	names := make([]string, 0, len(terms))
	for t, qtf := range terms {
		if qtf <= 0 {
			return nil, h4r.Errorf(h4r.EINVALID, "terms", "term %q has query frequency %d, it must be positive", t, qtf)
		}
		names = append(names, t)
	}
	slices.Sort(names) // a stable order, for reproducible walks
	n := x.slotOf.Len()
	var qs []queryTerm
	for _, t := range names {
		tid, ok := x.vocab[t]
		if !ok || x.lists[tid].df == 0 {
			continue
		}
		p := &x.lists[tid]
		qs = append(qs, queryTerm{p: p, w: float64(float64(terms[t])*idf(n, p.df)) * (k1 + 1)})
	}
	return qs, nil
}

func (x *Index) newSearcher(ctx context.Context, terms map[string]int, k int, o SearchOptions) (*searcher, error) {
	qs, err := x.weigh(terms)
	if err != nil || len(qs) == 0 || k == 0 {
		return nil, err
	}
	avg := x.avg()
	// Block maxima were taken at refAvg; they bound tfNorm at any
	// average below it, and grow at most as avg/refAvg above it.
	scale := 1.0
	if x.refAvg > 0 && avg > x.refAvg {
		scale = avg / x.refAvg
	}
	s := &searcher{ctx: ctx, x: x, top: topK{k: k, tie: o.Tie}, accept: o.Accept}
	s.a, s.bb = normParams(avg)
	for _, q := range qs {
		ubW := q.w * scale
		c := &cursor{docs: q.p.docs.reader(), n: q.p.docs.len(), tfs: q.p.tfs, maxF: q.p.maxF, last: q.p.last, w: q.w, ubW: ubW, ub: ubW * q.p.top}
		c.moveTo(0)
		s.cs = append(s.cs, c)
	}
	return s, nil
}

// moveTo sets the current posting.
func (c *cursor) moveTo(pos int) {
	c.pos = pos
	if pos < c.n {
		c.cur = c.docs.at(pos)
	} else {
		c.cur = end
	}
}

func (c *cursor) next() { c.moveTo(c.pos + 1) }

// blockFrom returns the first block from bl on whose last document is at
// least target (len(last) when none).
func (c *cursor) blockFrom(bl int, target uint32) int {
	last := c.last
	if bl >= len(last) || last[bl] >= target {
		return bl
	}
	// Gallop, then search: targets are usually near.
	lo, step := bl+1, 1
	for lo+step < len(last) && last[lo+step] < target {
		lo += step
		step *= 2
	}
	i, _ := slices.BinarySearch(last[lo:min(lo+step+1, len(last))], target)
	return lo + i
}

// advance moves to the first posting whose document is at least target.
func (c *cursor) advance(target uint32) {
	if c.cur >= target {
		return
	}
	bl := c.blockFrom(c.pos/blockSize, target)
	if bl == len(c.last) {
		c.moveTo(c.n)
		return
	}
	from := max(c.pos, bl*blockSize)
	to := min((bl+1)*blockSize, c.n)
	// Targets are often a few postings on: look there before searching.
	for i := from; i < min(from+4, to); i++ {
		if c.docs.at(i) >= target {
			c.moveTo(i)
			return
		}
	}
	c.moveTo(c.docs.search(from, to, target))
}

// blockBound returns an upper bound of the term's score for every document
// from target up to the returned last (the end of the block that would
// hold target), without moving the cursor. Past the list's end the bound is
// 0, up to end.
func (c *cursor) blockBound(target uint32) (float64, uint32) {
	if c.cur == end {
		return 0, end
	}
	bl := c.pos / blockSize
	if c.blk > bl && c.last[c.blk-1] < target {
		bl = c.blk
	}
	bl = c.blockFrom(bl, target)
	c.blk = bl
	if bl == len(c.last) {
		return 0, end
	}
	return c.ubW * c.maxF[bl], c.last[bl]
}

// windowBound returns an upper bound of the term's score in the documents
// [lo, hi) for a cursor at or after lo: the largest maximum of the blocks
// that reach into the window, 0 when none does.
func (c *cursor) windowBound(hi uint32) float64 {
	if c.cur >= hi {
		return 0
	}
	m := 0.0
	for bl := c.pos / blockSize; bl < len(c.last); bl++ {
		m = max(m, c.maxF[bl])
		if c.last[bl] >= hi-1 {
			break
		}
	}
	return c.ubW * m
}

// score is the term's fixed-point score in the current document.
func (c *cursor) score(length uint32, a, bb float64) int64 {
	return quantize(float64(c.w * tfNorm(c.tfs.at(c.pos), length, a, bb)))
}

// checkCtx is called every 1024 steps of a walk.
func (s *searcher) checkCtx(step int) error {
	if step&1023 == 0 {
		return s.ctx.Err()
	}
	return nil
}

// offer adds slot, of the given score, to the top k if it enters and is
// accepted.
func (s *searcher) offer(slot uint32, score int64) {
	id := s.x.ids[slot]
	if s.top.enters(score, id) && (s.accept == nil || s.accept(id)) {
		s.top.push(hit{id: id, score: score})
	}
}

// sortByDoc orders the cursors by current document (insertion sort: one
// or a few move per step).
func sortByDoc(cs []*cursor) {
	for i := 1; i < len(cs); i++ {
		for j := i; j > 0 && cs[j].cur < cs[j-1].cur; j-- {
			cs[j], cs[j-1] = cs[j-1], cs[j]
		}
	}
}

// wand is block-max WAND. Cursors are kept sorted by document; the pivot
// is the first document where the terms at or before it could, by their
// global bounds, reach the k-th score; no earlier document can.
func (s *searcher) wand() error {
	cs := s.cs
	sortByDoc(cs)
	for step := 0; ; step++ {
		if err := s.checkCtx(step); err != nil {
			return err
		}
		theta := s.top.threshold()
		p, acc := -1, 0.0
		for i, c := range cs {
			if c.cur == end {
				break
			}
			acc += c.ub
			if !below(acc, i+1, theta) {
				p = i
				break
			}
		}
		if p < 0 {
			return nil
		}
		pd := cs[p].cur
		for p+1 < len(cs) && cs[p+1].cur == pd {
			p++
		}
		if s.top.full() {
			// The block bounds of the terms up to the pivot hold for
			// every document from pd to the nearest block end; before
			// the next cursor's document no other term can add.
			bound, last := 0.0, uint32(end)
			for _, c := range cs[:p+1] {
				u, l := c.blockBound(pd)
				bound += u
				last = min(last, l)
			}
			if below(bound, p+1, theta) {
				next := last + 1
				if p+1 < len(cs) {
					next = min(next, cs[p+1].cur)
				}
				for _, c := range cs[:p+1] {
					c.advance(next)
				}
				sortByDoc(cs)
				continue
			}
		}
		if cs[0].cur == pd {
			if s.x.live[pd] {
				length := s.x.length[pd]
				var score int64
				for _, c := range cs[:p+1] {
					score += c.score(length, s.a, s.bb)
				}
				s.offer(pd, score)
			}
			for _, c := range cs[:p+1] {
				c.next()
			}
		} else {
			for _, c := range cs[:p] {
				c.advance(pd)
			}
		}
		sortByDoc(cs)
	}
}

// maxScore is MaxScore over windows of slots. A window starts at the first
// document any term holds from where the last one ended. In it, the terms
// are ordered by their bound over the window's blocks, and the smallest
// ones whose bounds sum below the k-th score are non-essential: a document
// only they hold cannot enter. The essential terms are scored into the
// window term at a time (a tight loop over their postings); then each
// document they hold is completed by the non-essential terms, largest
// first, while its score plus what is left to add could still enter. A
// window where every term is non-essential is skipped whole.
func (s *searcher) maxScore() error {
	cs := s.cs
	acc := make([]int64, window)
	var seen [window / 64]uint64
	prefix := make([]float64, len(cs)+1) // prefix[i]: the window bounds of order[:i]
	order := slices.Clone(cs)
	for lo, step := uint32(0), 0; ; step++ {
		if err := s.checkCtx(step); err != nil {
			return err
		}
		first := uint32(end)
		for _, c := range cs {
			c.advance(lo)
			first = min(first, c.cur)
		}
		if first == end {
			return nil
		}
		lo = first
		hi := lo + min(window, end-lo)
		theta := s.top.threshold()
		for _, c := range cs {
			c.wub = c.windowBound(hi)
		}
		slices.SortFunc(order, func(a, b *cursor) int { return cmp.Compare(a.wub, b.wub) })
		ess := 0 // order[:ess] are non-essential
		for ess < len(order) && below(prefix[ess]+order[ess].wub, ess+1, theta) {
			prefix[ess+1] = prefix[ess] + order[ess].wub
			ess++
		}
		if ess == len(order) {
			lo = hi
			continue
		}
		for _, c := range order[ess:] {
			for c.cur < hi {
				i := c.cur - lo
				acc[i] += c.score(s.x.length[c.cur], s.a, s.bb)
				seen[i/64] |= 1 << (i % 64)
				c.next()
			}
		}
		for wi := range seen {
			for word := seen[wi]; word != 0; word &= word - 1 {
				i := uint32(wi*64 + bits.TrailingZeros64(word))
				score := acc[i]
				acc[i] = 0
				if d := lo + i; s.x.live[d] {
					s.complete(d, score, order[:ess], prefix)
				}
			}
			seen[wi] = 0
		}
		lo = hi
	}
}

// complete adds the non-essential terms' scores to document d's essential
// score, largest bound first, and offers it, unless the bounds show first
// that it cannot enter.
func (s *searcher) complete(d uint32, score int64, nonEss []*cursor, prefix []float64) {
	theta := s.top.threshold()
	length := s.x.length[d]
	for i := len(nonEss) - 1; i >= 0; i-- {
		if below(float64(score)/unit+prefix[i+1], i+1, theta) {
			return
		}
		c := nonEss[i]
		c.advance(d)
		if c.cur == d {
			score += c.score(length, s.a, s.bb)
		}
	}
	s.offer(d, score)
}

// exhaustive scores every live match term at a time into one accumulator
// per slot, then keeps the best k accepted ones.
func (s *searcher) exhaustive() error {
	acc := make([]int64, len(s.x.ids))
	for _, c := range s.cs {
		if err := s.ctx.Err(); err != nil {
			return err
		}
		for j := range c.n {
			slot := c.docs.at(j)
			acc[slot] += quantize(float64(c.w * tfNorm(c.tfs.at(j), s.x.length[slot], s.a, s.bb)))
		}
	}
	for slot, score := range acc {
		// Every term's score is positive: 0 is no match.
		if score != 0 && s.x.live[slot] {
			s.offer(uint32(slot), score)
		}
	}
	return nil
}

// Reference is the plain definition Search is proven against: every live
// document holding a query term is scored, the accepted ones are fully
// sorted, and the first k returned.
func (x *Index) Reference(terms map[string]int, k int, o SearchOptions) ([]Hit, error) {
	if k < 0 {
		return nil, h4r.Errorf(h4r.EINVALID, "limit", "limit must not be negative, got %d", k)
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	qs, err := x.weigh(terms)
	if err != nil {
		return nil, err
	}
	a, bb := normParams(x.avg())
	scores := make([]int64, len(x.ids)) // by slot
	matched := make([]bool, len(x.ids))
	for _, q := range qs {
		docs := q.p.docs.reader()
		for j := range q.p.docs.len() {
			if slot := docs.at(j); x.live[slot] {
				scores[slot] += quantize(float64(q.w * tfNorm(q.p.tfs.at(j), x.length[slot], a, bb)))
				matched[slot] = true
			}
		}
	}
	order := topK{tie: o.Tie}
	var all []hit
	for slot, score := range scores {
		if matched[slot] && (o.Accept == nil || o.Accept(x.ids[slot])) {
			all = append(all, hit{id: x.ids[slot], score: score})
		}
	}
	slices.SortFunc(all, order.compare)
	order.h = all[:min(k, len(all))]
	return order.hits(), nil
}

// hit is a Hit with its fixed-point score.
type hit struct {
	id    uint32
	score int64
}

// topK keeps the best k hits seen, in a heap whose root is the worst.
type topK struct {
	k   int
	tie func(a, b uint32) int
	h   []hit
}

// compare orders hits best first: score descending, then tie, then id.
func (t *topK) compare(a, b hit) int {
	if a.score != b.score {
		return cmp.Compare(b.score, a.score)
	}
	if t.tie != nil {
		if c := t.tie(a.id, b.id); c != 0 {
			return c
		}
	}
	return cmp.Compare(a.id, b.id)
}

func (t *topK) full() bool { return len(t.h) == t.k }

// threshold is the k-th score in score units, −Inf until k hits are held.
func (t *topK) threshold() float64 {
	if !t.full() {
		return math.Inf(-1)
	}
	return float64(t.h[0].score) / unit
}

// enters reports whether a hit would be kept.
func (t *topK) enters(score int64, id uint32) bool {
	if !t.full() {
		return true
	}
	if score != t.h[0].score {
		return score > t.h[0].score
	}
	return t.compare(hit{id: id, score: score}, t.h[0]) < 0
}

// push adds a hit that enters, dropping the worst when full.
func (t *topK) push(h hit) {
	if !t.full() {
		t.h = append(t.h, h)
		for i := len(t.h) - 1; i > 0; { // sift up
			parent := (i - 1) / 2
			if t.compare(t.h[i], t.h[parent]) <= 0 {
				break
			}
			t.h[i], t.h[parent] = t.h[parent], t.h[i]
			i = parent
		}
		return
	}
	t.h[0] = h
	for i := 0; ; { // sift down: the worse child rises
		l, r, worst := 2*i+1, 2*i+2, i
		if l < len(t.h) && t.compare(t.h[l], t.h[worst]) > 0 {
			worst = l
		}
		if r < len(t.h) && t.compare(t.h[r], t.h[worst]) > 0 {
			worst = r
		}
		if worst == i {
			return
		}
		t.h[i], t.h[worst] = t.h[worst], t.h[i]
		i = worst
	}
}

// hits returns the hits best first.
func (t *topK) hits() []Hit {
	slices.SortFunc(t.h, t.compare)
	out := make([]Hit, len(t.h))
	for i, h := range t.h {
		out[i] = Hit{ID: h.id, Score: float64(h.score) / unit}
	}
	return out
}
