package bridge

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/scs"
)

// Index is the bridge contract's signature index, kept in memory: the signature
// of every stored trajectory, with postings from each key concept to the
// trajectories that have it, and the numbers scoring needs of each in a
// dense array (briefs). A cache miss is then a similarity lookup over the
// index (concept overlap counted from the postings, the rest of the score
// from the briefs; above unrelatedMax only trajectories sharing a concept
// are visited), not a pack: see IndexSource, which still passes what it
// finds through the policy slicer and budgets.
//
// It is filled by Load (all trajectories, at start and when a follower
// falls behind) and kept in step by Sync (the ids a write touched, here
// or, through the store's change log, on another replica). It is safe for
// concurrent use; entries are never changed in place, so a lookup holds
// the lock only while it scores.
type Index struct {
	extractor ConceptExtractor

	mu     sync.RWMutex
	loaded bool
	slots  []*indexEntry // nil: removed
	// briefs[slot] is what scoring needs of slots[slot], kept beside the
	// slots so that a lookup scores thousands without reading entries.
	briefs []brief
	// shapes[slot] is what a lookup reads of a slot before scoring it,
	// 12 bytes a slot, to rule out most of those it visits.
	shapes   []shape
	byID     map[string]int32   // live slot of each id
	postings map[string][]int32 // concept → slots (dead slots are skipped)
	// few[concept][n-1] are the slots of postings[concept] with n
	// concepts, up to fewConcepts: those the longest posting of a call
	// may add.
	few map[string]*[fewConcepts][]int32
	// conceptIDs numbers the concepts indexed, and slotConcepts[at:at+n]
	// are a slot's concepts by number (at and n in its shape), so that a
	// lookup asks whether a slot has a concept without reading a posting.
	conceptIDs   map[string]int32
	slotConcepts []int32
	// conceptless and byFingerprint hold the slots a call can be related
	// to without sharing a concept: trajectories without concepts (a call
	// without concepts has Jaccard 1 with them) and the same text.
	conceptless   []int32
	byFingerprint map[string][]int32
	// domains and tools number the domains and tool names indexed (from
	// 1; the empty domain is 0), so that scoring compares integers.
	domains, tools map[string]int32
	// repeats is set when some entry lists a concept twice (an extractor
	// other than TechExtractor): a lookup then counts every posting.
	repeats bool
	dead    int
	// scratch lends lookups their working memory (*scratch), so that a
	// miss does not allocate the size of the index.
	scratch sync.Pool
	// loading counts Loads in flight; while one is, Put and Remove are
	// also recorded in replay and applied again to the loaded index, so
	// that a write indexed during a Load is not lost by its swap.
	loading int
	replay  []func(*Index)
	// gen moves on with every change of what is indexed (Generation).
	gen atomic.Uint64
}

// indexEntry is one trajectory: the stored item (what the policy decides
// on), the candidate it is when delivered unredacted, and its signature.
// All three are read-only once indexed.
type indexEntry struct {
	item  *h4r.Item
	cand  Candidate
	sig   *Signature
	facts facts
}

// facts are what score needs of a signature besides the shared concepts,
// in the index's numbering of domains and tools.
type facts struct {
	concepts    int // distinct key concepts
	domain      int32
	tools       []int32
	complexity  float64
	fingerprint string
}

// brief is an entry's facts without pointers, for the index's dense
// array. Tools are a bit set when the entry's tool numbers are distinct
// and at most 64 (then the shared ones are counted in one instruction),
// else score reads the entry's facts.
type brief struct {
	concepts    int32
	domain      int32
	tools       int32
	toolsAsBits bool
	toolBits    uint64
	complexity  float64
	idKey       idKey  // idKeyOf(id)
	fpKey       uint64 // prefixKey(fingerprint): unequal keys, other texts
}

// briefOf is f as a brief.
func briefOf(f facts) brief {
	b := brief{concepts: int32(f.concepts), domain: f.domain, tools: int32(len(f.tools)), complexity: f.complexity, toolsAsBits: true}
	for _, t := range f.tools {
		if t < 1 || t > 64 || b.toolBits&(1<<(t-1)) != 0 {
			b.toolsAsBits, b.toolBits = false, 0
			break
		}
		b.toolBits |= 1 << (t - 1)
	}
	return b
}

// shape is what a lookup reads of a slot before scoring it: how many
// concepts it has, its domain, and where its concept numbers are.
type shape struct {
	concepts int32
	domain   int32
	at       int32 // in slotConcepts
}

// fewConcepts is the most concepts of the slots in few: above it a call's
// longest posting is read whole.
const fewConcepts = 4

// callFacts are a call's facts and the bit set of its tools numbered at
// most 64.
type callFacts struct {
	facts
	toolBits uint64
	fpKey    uint64
}

// MaxIndexed is how many trajectories Load reads, newest first: the
// stores' largest filter-only read (h4r.MaxFindLimit), which covers the
// design's 10k trajectories. Older ones are found by the pack path only
// until Sync sees them written.
const MaxIndexed = h4r.MaxFindLimit

// NewIndex returns an empty index; lookups fall back to the Source given
// to IndexSource until Load has succeeded once.
func NewIndex(x ConceptExtractor) *Index {
	if x == nil {
		x = TechExtractor{}
	}
	return &Index{extractor: x, byID: map[string]int32{}, postings: map[string][]int32{}, byFingerprint: map[string][]int32{},
		domains: map[string]int32{}, tools: map[string]int32{}, few: map[string]*[fewConcepts][]int32{}, conceptIDs: map[string]int32{}}
}

// Finder reads stored items by filter (the stores' Find).
type Finder interface {
	Find(ctx context.Context, q h4r.ItemQuery) ([]*h4r.Item, error)
}

// Getter reads one item; a missing one is an h4r.ENOTFOUND error.
type Getter interface {
	Get(ctx context.Context, id string) (*h4r.Item, error)
}

// Load replaces the index with every stored trajectory. It catches the
// writes Sync did not see (another replica's) and drops removed ones.
func (x *Index) Load(ctx context.Context, store Finder) error {
	x.mu.Lock()
	x.loading++
	x.mu.Unlock()
	defer func() {
		x.mu.Lock()
		if x.loading--; x.loading == 0 {
			x.replay = nil
		}
		x.mu.Unlock()
	}()
	items, err := store.Find(ctx, h4r.ItemQuery{Filters: h4r.Filters{Kinds: []string{KindTrajectory}}, Limit: MaxIndexed})
	if err != nil {
		return fmt.Errorf("loading the trajectory signatures: %w", err)
	}
	fresh := NewIndex(x.extractor)
	for _, it := range items {
		fresh.put(it)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, op := range x.replay {
		op(fresh)
	}
	x.shapes, x.few, x.conceptIDs, x.slotConcepts = fresh.shapes, fresh.few, fresh.conceptIDs, fresh.slotConcepts
	x.slots, x.briefs, x.byID, x.postings, x.dead, x.loaded = fresh.slots, fresh.briefs, fresh.byID, fresh.postings, fresh.dead, true
	x.conceptless, x.byFingerprint, x.domains, x.tools, x.repeats = fresh.conceptless, fresh.byFingerprint, fresh.domains, fresh.tools, fresh.repeats
	x.gen.Add(1)
	return nil
}

// Sync brings the named ids in step with the store: trajectories are
// (re)indexed, anything else or missing is removed. It is the store
// mirror of the app's writes.
func (x *Index) Sync(ctx context.Context, store Getter, ids []string) error {
	var errs []error
	for _, id := range ids {
		it, err := store.Get(ctx, id)
		switch {
		case err == nil && it.Kind == KindTrajectory:
			x.Put(it)
		case err == nil || h4r.ErrorCode(err) == h4r.ENOTFOUND:
			x.Remove(id)
		default:
			errs = append(errs, fmt.Errorf("reading %q for the trajectory index: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// Put indexes (or reindexes) one trajectory.
func (x *Index) Put(it *h4r.Item) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.put(it)
	x.gen.Add(1)
	if x.loading > 0 {
		x.replay = append(x.replay, func(f *Index) { f.put(it) })
	}
}

// Remove drops a trajectory, if indexed.
func (x *Index) Remove(id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.byID[id]; ok {
		x.gen.Add(1)
	}
	x.remove(id)
	if x.loading > 0 {
		x.replay = append(x.replay, func(f *Index) { f.remove(id) })
	}
}

// Generation is a number that moves on whenever what is indexed changes
// (Load, Put, or the Remove of an indexed id), after the change: an answer
// read from the index at one generation holds only while it is current.
func (x *Index) Generation() uint64 { return x.gen.Load() }

// Len is how many trajectories are indexed.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.byID)
}

// Loaded reports whether Load has succeeded once.
func (x *Index) Loaded() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.loaded
}

func (x *Index) put(it *h4r.Item) {
	x.remove(it.ID)
	c := candidateOf(it.ID, it.Text, it.Content)
	e := &indexEntry{item: it, cand: c, sig: signatureOf(c.Description, c.Domain, c.ToolSequence, x.extractor)}
	e.facts = facts{concepts: len(e.sig.KeyConcepts), complexity: e.sig.Complexity, fingerprint: e.sig.Fingerprint,
		domain: intern(x.domains, e.sig.Domain), tools: make([]int32, len(e.sig.ToolSequence))}
	for i, t := range e.sig.ToolSequence {
		e.facts.tools[i] = intern(x.tools, t)
	}
	x.add(e)
}

// intern returns s's number in ids, adding it if new; "" is 0.
func intern(ids map[string]int32, s string) int32 {
	if s == "" {
		return 0
	}
	id, ok := ids[s]
	if !ok {
		id = int32(len(ids) + 1)
		ids[s] = id
	}
	return id
}

// callFacts are sig's facts in x's numbering; a domain or tool x has not
// seen is -1, which equals none indexed. The caller holds the read lock.
func (x *Index) callFacts(sig *Signature) callFacts {
	known := func(ids map[string]int32, s string) int32 {
		if id, ok := ids[s]; ok || s == "" {
			return id
		}
		return -1
	}
	f := facts{concepts: len(sig.KeyConcepts), complexity: sig.Complexity, fingerprint: sig.Fingerprint,
		domain: known(x.domains, sig.Domain), tools: make([]int32, len(sig.ToolSequence))}
	var bits uint64
	for i, t := range sig.ToolSequence {
		f.tools[i] = known(x.tools, t)
		if f.tools[i] >= 1 && f.tools[i] <= 64 {
			bits |= 1 << (f.tools[i] - 1)
		}
	}
	return callFacts{f, bits, prefixKey(f.fingerprint)}
}

// add gives e the next slot and posts it.
func (x *Index) add(e *indexEntry) {
	slot := int32(len(x.slots))
	x.slots = append(x.slots, e)
	b := briefOf(e.facts)
	b.idKey, b.fpKey = idKeyOf(e.item.ID), prefixKey(e.facts.fingerprint)
	x.briefs = append(x.briefs, b)
	x.shapes = append(x.shapes, shape{concepts: b.concepts, domain: b.domain, at: int32(len(x.slotConcepts))})
	x.byID[e.item.ID] = slot
	for _, k := range e.sig.KeyConcepts {
		x.postings[k] = append(x.postings[k], slot)
		if n := len(e.sig.KeyConcepts); n <= fewConcepts {
			few := x.few[k]
			if few == nil {
				few = new([fewConcepts][]int32)
				x.few[k] = few
			}
			few[n-1] = append(few[n-1], slot)
		}
		x.slotConcepts = append(x.slotConcepts, intern(x.conceptIDs, k))
	}
	if len(e.sig.KeyConcepts) == 0 {
		x.conceptless = append(x.conceptless, slot)
	}
	x.repeats = x.repeats || !distinct(e.sig.KeyConcepts)
	x.byFingerprint[e.sig.Fingerprint] = append(x.byFingerprint[e.sig.Fingerprint], slot)
}

// distinct reports whether no string is in ss twice.
func distinct(ss []string) bool {
	for i, s := range ss {
		if slices.Contains(ss[:i], s) {
			return false
		}
	}
	return true
}

func (x *Index) remove(id string) {
	slot, ok := x.byID[id]
	if !ok {
		return
	}
	x.slots[slot] = nil
	delete(x.byID, id)
	x.dead++
	if x.dead > 1024 && x.dead > len(x.slots)/2 {
		x.compact()
	}
}

// compact rebuilds the slots and postings without the removed entries.
func (x *Index) compact() {
	live := make([]*indexEntry, 0, len(x.byID))
	for _, e := range x.slots {
		if e != nil {
			live = append(live, e)
		}
	}
	x.shapes, x.few, x.conceptIDs, x.slotConcepts = nil, map[string]*[fewConcepts][]int32{}, map[string]int32{}, nil
	x.slots, x.briefs, x.byID, x.postings, x.dead = nil, nil, make(map[string]int32, len(live)), map[string][]int32{}, 0
	x.conceptless, x.byFingerprint, x.repeats = nil, make(map[string][]int32, len(live)), false
	for _, e := range live {
		x.add(e)
	}
}

// scored is a trajectory and its concept similarity to a call.
type scored struct {
	e     *indexEntry
	score float64
	idKey idKey // idKeyOf(e.item.ID)
}

// unrelatedMax is the highest score a trajectory can reach against a call
// it shares no concept with (and neither is without concepts, nor the
// same text): Jaccard 0, every tool shared, equal complexity, and the
// domain term either matched or left out. It is computed by weighted
// itself, whose rounding is monotone, so no such score exceeds it.
var unrelatedMax = max(
	weighted(0, 1, &Signature{Domain: "d"}, &Signature{Domain: "d"}),
	weighted(0, 1, &Signature{}, &Signature{}))

// rank scores the indexed trajectories at or above floor against sig, in
// two parts, unsorted: related ones (sharing a concept or the
// fingerprint, or both without concepts), and the rest, which are scored
// only when asked for (rest is called). Above unrelatedMax the rest cannot
// reach floor, and only the related ones are visited, from the postings
// of the call's concepts: a miss then costs the size of those postings,
// not of the index. Call release once done with related. The scores are
// exactly ConceptSimilarity's (1 for the same text), as Bridge.match
// would score the candidates, when exact: the concepts of the call and of
// every indexed trajectory are distinct, as score counts them.
func (x *Index) rank(sig *Signature, floor float64) (related []scored, rest func() []scored, release func(), exact bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	exact = !x.repeats && distinct(sig.KeyConcepts)
	if floor > unrelatedMax {
		work := x.lendScratch()
		related = x.rankRelated(sig, floor, work)
		return related, func() []scored { return nil }, func() {
			clear(related) // no entry kept alive by the pool (past its length it was never written)
			work.related = related[:0]
			x.scratch.Put(work)
		}, exact
	}
	related, rest = x.rankAll(sig, floor)
	return related, rest, func() {}, exact
}

// scratch is a lookup's working memory: zeroed per-slot counters, the
// slots they count, and the ranking.
type scratch struct {
	counts  []int32
	touched []int32
	related []scored
}

// lendScratch returns scratch whose counters cover every slot and are
// zero. The caller holds the read lock (slots do not grow).
func (x *Index) lendScratch() *scratch {
	sc, ok := x.scratch.Get().(*scratch)
	if !ok {
		sc = &scratch{}
	}
	if len(sc.counts) < len(x.slots) {
		sc.counts = make([]int32, len(x.slots))
	}
	return sc
}

// rankRelated scores only the trajectories related to sig, found from the
// postings. It is rankAll's first part (TestPrunedRankEqualsFullRank).
// The longest posting of the call's concepts (a word most trajectories
// share) is read last: a trajectory only in it shares one concept, and is
// scored only when that could reach floor (mayReach). When only
// trajectories with few concepts could, that posting is not read at all:
// those are in few, and the others already counted are asked whether they
// have the concept (slotConcepts). Before a counted trajectory is scored,
// its shared concepts, its number of concepts and its domain must be able
// to reach floor (reach). The caller holds the read lock.
func (x *Index) rankRelated(sig *Signature, floor float64, work *scratch) []scored {
	call := x.callFacts(sig)
	counts, touched := work.counts, work.touched[:0]
	defer func() { work.touched = touched[:0] }()
	lead := -1 // in sig.KeyConcepts
	if !x.repeats && distinct(sig.KeyConcepts) {
		for i, k := range sig.KeyConcepts {
			if lead < 0 || len(x.postings[k]) > len(x.postings[sig.KeyConcepts[lead]]) {
				lead = i
			}
		}
	}
	for i, k := range sig.KeyConcepts {
		if i == lead {
			continue
		}
		for _, slot := range x.postings[k] {
			if counts[slot] == 0 {
				touched = append(touched, slot)
			}
			counts[slot]++
		}
	}
	if lead >= 0 {
		k := sig.KeyConcepts[lead]
		id, indexed := x.conceptIDs[k]
		if most := mostConceptsReaching(floor, call.concepts); indexed && most <= fewConcepts {
			for _, slot := range touched {
				sh := x.shapes[slot]
				if slices.Contains(x.slotConcepts[sh.at:sh.at+sh.concepts], id) {
					counts[slot]++
				}
			}
			if few := x.few[k]; few != nil {
				for _, slots := range few[:most] {
					for _, slot := range slots {
						if counts[slot] == 0 {
							touched = append(touched, slot)
							counts[slot] = 1
						}
					}
				}
			}
		} else {
			var reaches [32]int8 // mayReach by the trajectory's concepts: 1 yes, -1 no, 0 not yet asked
			for _, slot := range x.postings[k] {
				if counts[slot] > 0 {
					counts[slot]++
					continue
				}
				n := int(x.shapes[slot].concepts)
				if n >= len(reaches) {
					if !mayReach(floor, 1, call.concepts, n) {
						continue
					}
				} else {
					if reaches[n] == 0 {
						reaches[n] = -1
						if mayReach(floor, 1, call.concepts, n) {
							reaches[n] = 1
						}
					}
					if reaches[n] < 0 {
						continue
					}
				}
				touched = append(touched, slot)
				counts[slot] = 1
			}
		}
	}
	related := work.related[:0]
	// Related without a shared concept: the same text, and, for a call
	// without concepts, the trajectories without any. Each slot once, and
	// none counted above. One ruled out above (sharing only the lead
	// concept) is scored as sharing none: lower still, unless it is the
	// same text, which scores 1 whatever it shares. The same text counted
	// above is marked (a negative count) to be scored whatever reach says.
	var also []int32
	if len(sig.KeyConcepts) == 0 {
		also = append(also, x.conceptless...)
	}
	also = append(also, x.byFingerprint[sig.Fingerprint]...)
	slices.Sort(also)
	for i, slot := range also {
		if i > 0 && also[i-1] == slot {
			continue
		}
		if counts[slot] > 0 {
			counts[slot] = -counts[slot]
			continue
		}
		if e := x.slots[slot]; e != nil {
			if sc := x.score(&call, slot, 0); sc >= floor {
				related = append(related, scored{e, sc, x.briefs[slot].idKey})
			}
		}
	}
	var may reach
	for _, slot := range touched {
		inter := int(counts[slot])
		counts[slot] = 0 // the counters go back zeroed
		if inter < 0 {
			inter = -inter // the same text
		} else if !may.reach(floor, &call, inter, x.shapes[slot]) {
			continue
		}
		if e := x.slots[slot]; e != nil {
			if sc := x.score(&call, slot, inter); sc >= floor {
				related = append(related, scored{e, sc, x.briefs[slot].idKey})
			}
		}
	}
	return related
}

// mostConceptsReaching is the most concepts a trajectory sharing one
// concept with a call of callN concepts may have and reach floor
// (mayReach), up to fewConcepts+1 (more).
func mostConceptsReaching(floor float64, callN int) int {
	n := 0
	for n <= fewConcepts && mayReach(floor, 1, callN, n+1) {
		n++
	}
	return n
}

// reach remembers mayReachIn's answers by the shared concepts, the
// trajectory's concepts and how its domain compares with the call's.
type reach struct {
	known [3][8][32]int8 // 1 yes, -1 no, 0 not yet asked
}

// reach reports whether a trajectory of shape sh sharing inter concepts
// with the call may score floor (mayReachIn).
func (r *reach) reach(floor float64, call *callFacts, inter int, sh shape) bool {
	noDomain, sameDomain := call.domain == 0 || sh.domain == 0, call.domain == sh.domain
	n := int(sh.concepts)
	if inter >= len(r.known[0]) || n >= len(r.known[0][0]) {
		return mayReachIn(floor, inter, call.concepts, n, noDomain, sameDomain)
	}
	kind := 2
	switch {
	case noDomain:
		kind = 0
	case sameDomain:
		kind = 1
	}
	k := &r.known[kind][inter][n]
	if *k == 0 {
		*k = -1
		if mayReachIn(floor, inter, call.concepts, n, noDomain, sameDomain) {
			*k = 1
		}
	}
	return *k > 0
}

// mayReachIn is mayReach for a trajectory whose domain is known: missing
// (noDomain) or the same as the call's or not, as score compares them.
func mayReachIn(floor float64, inter, callN, n int, noDomain, sameDomain bool) bool {
	jac := 1.0
	if union := callN + n - inter; union > 0 {
		jac = float64(inter) / float64(union)
	}
	return weightedBy(jac, 1, 0, 0, noDomain, sameDomain) >= floor
}

// mayReach reports whether a trajectory with n concepts, inter of them
// shared with a call of callN concepts, may score floor: its Jaccard with
// every other term of score at its best (all tools shared, the same
// complexity, the domain matched or left out). score's arithmetic on
// smaller terms gives no more (IEEE rounding is monotone), so false is
// never wrong, except for the same text (score 1), which the caller keeps.
func mayReach(floor float64, inter, callN, n int) bool {
	return mayReachIn(floor, inter, callN, n, false, true) || mayReachIn(floor, inter, callN, n, true, false)
}

// rankAll scores every indexed trajectory at or above floor against sig:
// the related ones now, the rest when asked for. The caller holds the
// read lock.
func (x *Index) rankAll(sig *Signature, floor float64) (related []scored, rest func() []scored) {
	call := x.callFacts(sig)
	overlap := make([]int32, len(x.slots))
	for _, k := range sig.KeyConcepts {
		for _, slot := range x.postings[k] {
			overlap[slot]++
		}
	}
	type other struct {
		e *indexEntry
		b brief
	}
	var others []other
	for slot, e := range x.slots {
		if e == nil {
			continue
		}
		inter := int(overlap[slot])
		if inter == 0 && e.sig.Fingerprint != sig.Fingerprint && (len(sig.KeyConcepts) > 0 || len(e.sig.KeyConcepts) > 0) {
			others = append(others, other{e, x.briefs[slot]}) // scored after the lock is released
			continue
		}
		if sc := x.score(&call, int32(slot), inter); sc >= floor {
			related = append(related, scored{e, sc, x.briefs[slot].idKey})
		}
	}
	return related, func() []scored {
		var out []scored
		for _, o := range others {
			if sc := scoreBrief(&call, &o.b, o.e, 0); sc >= floor {
				out = append(out, scored{o.e, sc, o.b.idKey})
			}
		}
		return out
	}
}

// better orders scored trajectories: higher score, then lower id.
func better(a, b scored) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	if a.idKey != b.idKey {
		return a.idKey.less(b.idKey)
	}
	return a.e.item.ID < b.e.item.ID
}

// idKey is an id's first 16 bytes as two prefixKeys: ids that differ
// there, as generated ones with a long common prefix ("load-0001234")
// do, are ordered by their keys without reading the strings.
type idKey struct{ first, second uint64 }

// idKeyOf is id's key.
func idKeyOf(id string) idKey {
	return idKey{prefixKey(id), prefixKey(id[min(8, len(id)):])}
}

// less orders keys as their ids, when they differ.
func (k idKey) less(o idKey) bool {
	if k.first != o.first {
		return k.first < o.first
	}
	return k.second < o.second
}

// prefixKey is s's first 8 bytes as a big-endian number, zero-padded:
// strings whose keys differ are in the order of their keys (and differ),
// so that ordering ties by id, or comparing fingerprints, rarely reads the
// strings themselves.
func prefixKey(s string) uint64 {
	var b [8]byte
	copy(b[:], s)
	return binary.BigEndian.Uint64(b[:])
}

// takeBest removes the k best of *s and returns them best first. A cache
// miss needs one or two chunks of the ranking, not all of it sorted: the
// k-th best score is found with a heap of k scores, the entries above it
// taken, and of those tied with it the lowest ids (TestTakeBestIsSorted).
func takeBest(s *[]scored, k int) []scored {
	all := *s
	if k >= len(all) {
		slices.SortFunc(all, byBetter)
		*s = nil
		return all
	}
	if k <= 0 {
		return nil
	}
	kth := kthScore(all, k)
	out := make([]scored, 0, k)
	var tied []scored
	for _, c := range all {
		switch {
		case c.score > kth:
			out = append(out, c)
		case c.score == kth:
			tied = append(tied, c)
		}
	}
	slices.SortFunc(tied, byBetter)
	tied = tied[:k-len(out)]
	last := tied[len(tied)-1]
	out = append(out, tied...)
	slices.SortFunc(out, byBetter)
	rest := all[:0]
	for _, c := range all {
		if c.score < kth || c.score == kth && better(last, c) {
			rest = append(rest, c)
		}
	}
	*s = rest
	return out
}

// kthScore is the k-th highest score of all (0 < k <= len(all)), kept in
// a min-heap of the k highest seen.
func kthScore(all []scored, k int) float64 {
	h := make([]float64, 0, k)
	for _, c := range all {
		switch {
		case len(h) < k:
			h = append(h, c.score)
			for i := len(h) - 1; i > 0 && h[(i-1)/2] > h[i]; i = (i - 1) / 2 {
				h[i], h[(i-1)/2] = h[(i-1)/2], h[i]
			}
		case c.score > h[0]:
			h[0] = c.score
			for i := 0; ; {
				least, l, r := i, 2*i+1, 2*i+2
				if l < k && h[l] < h[least] {
					least = l
				}
				if r < k && h[r] < h[least] {
					least = r
				}
				if least == i {
					break
				}
				h[i], h[least] = h[least], h[i]
				i = least
			}
		}
	}
	return h[0]
}

func byBetter(a, b scored) int {
	if better(a, b) {
		return -1
	}
	if better(b, a) {
		return 1
	}
	return 0
}

// score is ConceptSimilarity of the call and the live entry in slot given
// the number of concepts they share (both hold distinct concepts), and 1
// for the same fingerprint as Bridge.match scores it: the same arithmetic
// on the numbers the index keeps (TestIndexEqualsScan,
// TestPrunedRankEqualsFullRank). The caller holds the read lock.
func (x *Index) score(call *callFacts, slot int32, inter int) float64 {
	return scoreBrief(call, &x.briefs[slot], x.slots[slot], inter)
}

// scoreBrief is score given the entry and its brief.
func scoreBrief(call *callFacts, b *brief, e *indexEntry, inter int) float64 {
	// The same text (fingerprint) is 1 whatever the concepts (an extractor
	// may read the case the fingerprint ignores); the 64 bytes are compared
	// only when their first 8 are the same.
	if b.fpKey == call.fpKey && call.fingerprint == e.facts.fingerprint {
		return 1
	}
	jac := 1.0
	if union := call.concepts + int(b.concepts) - inter; union > 0 {
		jac = float64(inter) / float64(union)
	}
	var tools float64
	if len(call.tools) > 0 && b.tools > 0 {
		n := 0
		if b.toolsAsBits {
			n = bits.OnesCount64(b.toolBits & call.toolBits)
		} else {
			for _, t := range e.facts.tools {
				if slices.Contains(call.tools, t) {
					n++
				}
			}
		}
		tools = float64(n) / float64(max(len(call.tools), int(b.tools)))
	}
	return weightedBy(jac, tools, call.complexity, b.complexity, call.domain == 0 || b.domain == 0, call.domain == b.domain)
}

// PolicySlicer applies the policy and budgets (scs.Slicer).
type PolicySlicer interface {
	Slice(ctx context.Context, spec h4r.Specialist, items []*h4r.Item, limits scs.Limits) scs.Outcome
}

// IndexSource is the Source of a cache miss: the best trajectories by
// concept similarity from the index, passed through the policy slicer
// (with the budgets of a pack of limit items) in rank order until limit
// of them are visible to the caller. Until the index has loaded it asks
// Fallback (EngineSource: a pack).
type IndexSource struct {
	Index    *Index
	Slicer   PolicySlicer
	Budget   scs.Limits // MaxBytes and MaxTokens of each slice; MaxItems is the call's limit
	Fallback Source
	// Floor leaves out trajectories whose concept similarity is below it.
	// With concept-only matching set it to the bridge's MinSimilarity:
	// they could not be matches, and are then never sliced. Leave it 0
	// with an embedder, whose similarity may lift them.
	Floor float64
}

// enoughChunk is how many candidates a read that may stop at enough
// slices at a time: a few more than enough, for the ones the policy hides
// or redacts.
func enoughChunk(enough int) int { return max(2*enough, 8) }

// Candidates implements Source. In concept-only mode the answer is what a
// scan of every trajectory the caller may see would give (TestIndexEqualsScan).
func (s IndexSource) Candidates(ctx context.Context, spec h4r.Specialist, sig *Signature, limit int) ([]Candidate, error) {
	return s.candidatesUpTo(ctx, spec, sig, limit, 0)
}

// Generation is the index's (Changes): a cached answer of this source is
// used only while the index has not changed.
func (s IndexSource) Generation() uint64 { return s.Index.Generation() }

// scoredBy is the extractor of the index's signatures and scores.
func (s IndexSource) scoredBy() ConceptExtractor { return s.Index.extractor }

// candidatesUpTo is Candidates that may stop early: once enough (> 0)
// candidates were delivered unredacted. Their similarity is then the
// index's exact score, and every candidate after them in rank order
// scores no higher and loses ties, so none could displace them from the
// best enough. Bridge.match asks for that with concept-only matching and
// the index's extractor (earlyReader), enough its MaxMatches: a miss then
// slices a chunk or two of the ranking instead of limit candidates.
//
// What stopping early can change, both rare: a candidate the policy
// redacts is scored anew on what the caller sees, which may rank it
// higher than its index score did, and one past the stopping point is not
// read (as one past limit never was); and each chunk is sliced under the
// whole byte and token budget, so a smaller chunk keeps a trajectory of
// tens of kilobytes that a chunk of limit would have run out of budget
// for. For unredacted trajectories within the budget the answer is the
// same (TestIndexEqualsScan, TestEarlyStopEqualsTheWholeLimit).
func (s IndexSource) candidatesUpTo(ctx context.Context, spec h4r.Specialist, sig *Signature, limit, enough int) ([]Candidate, error) {
	if !s.Index.Loaded() {
		if s.Fallback == nil {
			return nil, errors.New("the trajectory index has not loaded yet")
		}
		return s.Fallback.Candidates(ctx, spec, sig, limit)
	}
	related, rest, release, exact := s.Index.rank(sig, s.Floor)
	defer release()
	limits := s.Budget
	limits.MaxItems = limit
	// Reading can end at enough when the scores are exact and every
	// candidate is in one ranking (related: above unrelatedMax the rest
	// is empty), so that rank order is score order.
	chunkSize, unredacted := limit, 0
	early := enough > 0 && exact && s.Floor > unrelatedMax
	if early {
		chunkSize = min(limit, enoughChunk(enough))
	}
	out := make([]Candidate, 0, min(limit, chunkSize*2))
	sliced, failed := 0, 0 // items sliced, and those no decision could be made for
	var failure error
	for part := 0; part < 2 && len(out) < limit; part++ {
		ranked := related
		if part == 1 {
			ranked = rest()
		}
		for len(ranked) > 0 && len(out) < limit && !(early && unredacted >= enough) {
			chunk := takeBest(&ranked, chunkSize)
			items := make([]*h4r.Item, len(chunk))
			for i, c := range chunk {
				items[i] = c.e.item
			}
			o := s.Slicer.Slice(ctx, spec, items, limits)
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			for i, v := range o.Verdicts {
				if v.Reason == h4r.ReasonKept && v.Delivered != nil && len(out) < limit {
					c := s.Index.delivered(chunk[i].e, v)
					if c.sig != nil && exact {
						c.score, c.scored = chunk[i].score, true
						unredacted++
					}
					out = append(out, c)
				}
			}
			sliced, failed = sliced+len(items), failed+o.Failed
			if failure == nil {
				failure = o.Err
			}
			// No decision could be made for anything read so far, and a
			// policy service did not answer, or limit candidates failed:
			// the policy is down, which for the caller is the storage
			// failure of EHR-1. (Fewer failures are items the policy could
			// not decide, left out as it fails closed.)
			if len(out) == 0 && failed == sliced && failure != nil && (unanswered(failure) || sliced >= limit) {
				return nil, fmt.Errorf("deciding on trajectories: %w", failure)
			}
		}
	}
	if len(out) == 0 && sliced > 0 && failed == sliced && failure != nil {
		return nil, fmt.Errorf("deciding on trajectories: %w", failure)
	}
	return out, nil
}

// unanswered reports whether err says a policy service did not answer
// (policy.Remote), as opposed to a decision that failed for an item.
func unanswered(err error) bool {
	var u interface{ PolicyUnreachable() bool }
	return errors.As(err, &u) && u.PolicyUnreachable()
}

// delivered is the candidate the slicer delivered of e. Unredacted, the
// delivery is the stored item itself (its content map), so it is e's
// candidate, which comes with e's signature; redacted, it is read from
// what was delivered and its signature is made anew by Bridge.match.
func (x *Index) delivered(e *indexEntry, v scs.Verdict) Candidate {
	if v.Delivered.ID != e.item.ID {
		return candidateOf(v.Delivered.ID, v.Delivered.Text, v.Delivered.Content)
	}
	if v.Redacted {
		c := candidateOf(v.Delivered.ID, v.Delivered.Text, v.Delivered.Content)
		c.Version = e.item.Metadata.Version
		return c
	}
	c := e.cand
	c.sig, c.sigBy, c.Version = e.sig, x.extractor, e.item.Metadata.Version
	return c
}

// candidateOf reads a trajectory's fields from its (delivered) content.
func candidateOf(id, text string, content map[string]any) Candidate {
	c := Candidate{TrajectoryID: id, Description: str(content, "description"), SessionID: str(content, "session_id"),
		Domain: str(content, "domain"), SuccessScore: num(content, "success_score"), QualityScore: num(content, "quality_score")}
	if c.Description == "" {
		c.Description = text // a trajectory written as a plain item
	}
	if ts, ok := content["tool_sequence"].([]any); ok {
		for _, t := range ts {
			if s, ok := t.(string); ok {
				c.ToolSequence = append(c.ToolSequence, s)
			}
		}
	}
	return c
}
