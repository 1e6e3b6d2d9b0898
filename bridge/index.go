package bridge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/scs"
)

// Index is document 001's signature index, kept in memory: the signature
// of every stored trajectory, with postings from each key concept to the
// trajectories that have it. A cache miss is then a similarity lookup over
// the index (concept overlap counted from the postings, the rest of the
// score from the stored signature), not a pack: see IndexSource, which
// still passes what it finds through the policy slicer and budgets.
//
// It is filled by Load (all trajectories, at start and on each refresh)
// and kept in step by Sync (the ids a write touched). It is safe for
// concurrent use; entries are never changed in place, so a lookup holds
// the lock only while it scores.
type Index struct {
	extractor ConceptExtractor

	mu       sync.RWMutex
	loaded   bool
	slots    []*indexEntry      // nil: removed
	byID     map[string]int32   // live slot of each id
	postings map[string][]int32 // concept → slots (dead slots are skipped)
	dead     int
	// loading counts Loads in flight; while one is, Put and Remove are
	// also recorded in replay and applied again to the loaded index, so
	// that a write indexed during a Load is not lost by its swap.
	loading int
	replay  []func(*Index)
}

// indexEntry is one trajectory: the stored item (what the policy decides
// on) and its signature.
type indexEntry struct {
	item *h4r.Item
	sig  *Signature
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
	return &Index{extractor: x, byID: map[string]int32{}, postings: map[string][]int32{}}
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
	x.slots, x.byID, x.postings, x.dead, x.loaded = fresh.slots, fresh.byID, fresh.postings, fresh.dead, true
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
	if x.loading > 0 {
		x.replay = append(x.replay, func(f *Index) { f.put(it) })
	}
}

// Remove drops a trajectory, if indexed.
func (x *Index) Remove(id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.remove(id)
	if x.loading > 0 {
		x.replay = append(x.replay, func(f *Index) { f.remove(id) })
	}
}

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
	e := &indexEntry{item: it, sig: signatureOf(c.Description, c.Domain, c.ToolSequence, x.extractor)}
	slot := int32(len(x.slots))
	x.slots = append(x.slots, e)
	x.byID[it.ID] = slot
	for _, k := range e.sig.KeyConcepts {
		x.postings[k] = append(x.postings[k], slot)
	}
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
	x.slots, x.byID, x.postings, x.dead = nil, make(map[string]int32, len(live)), map[string][]int32{}, 0
	for _, e := range live {
		slot := int32(len(x.slots))
		x.slots = append(x.slots, e)
		x.byID[e.item.ID] = slot
		for _, k := range e.sig.KeyConcepts {
			x.postings[k] = append(x.postings[k], slot)
		}
	}
}

// scored is a trajectory and its concept similarity to a call.
type scored struct {
	e     *indexEntry
	score float64
}

// rank scores every indexed trajectory at or above floor against sig, in
// two parts, unsorted: related ones (sharing a concept or the
// fingerprint, or both without concepts), and the rest, which cannot score
// above (toolWeight+complexityWeight)/(1-domainWeight) and are scored only
// when asked for (rest is called).
func (x *Index) rank(sig *Signature, floor float64) (related []scored, rest func() []scored) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	overlap := make([]int32, len(x.slots))
	for _, k := range sig.KeyConcepts {
		for _, slot := range x.postings[k] {
			overlap[slot]++
		}
	}
	var others []*indexEntry
	for slot, e := range x.slots {
		if e == nil {
			continue
		}
		inter := int(overlap[slot])
		if inter == 0 && e.sig.Fingerprint != sig.Fingerprint && (len(sig.KeyConcepts) > 0 || len(e.sig.KeyConcepts) > 0) {
			others = append(others, e)
			continue
		}
		if sc := score(sig, e.sig, inter); sc >= floor {
			related = append(related, scored{e, sc})
		}
	}
	return related, func() []scored {
		var out []scored
		for _, e := range others {
			if sc := score(sig, e.sig, 0); sc >= floor {
				out = append(out, scored{e, sc})
			}
		}
		return out
	}
}

// better orders scored trajectories: higher score, then lower id.
func better(a, b scored) bool {
	return a.score > b.score || a.score == b.score && a.e.item.ID < b.e.item.ID
}

// takeBest removes the k best of *s and returns them best first. A cache
// miss needs one or two chunks of the ranking, not all of it sorted: this
// keeps the k best seen in an insertion-sorted slice, which most entries
// pass after one comparison.
func takeBest(s *[]scored, k int) []scored {
	all := *s
	if k >= len(all) {
		slices.SortFunc(all, func(a, b scored) int {
			if better(a, b) {
				return -1
			}
			return 1
		})
		*s = nil
		return all
	}
	top := make([]int, 0, k+1) // indices into all, best first
	for i := range all {
		if len(top) == k && !better(all[i], all[top[k-1]]) {
			continue
		}
		at, _ := slices.BinarySearchFunc(top, i, func(j, i int) int {
			if better(all[j], all[i]) {
				return -1
			}
			return 1
		})
		top = slices.Insert(top, at, i)
		if len(top) > k {
			top = top[:k]
		}
	}
	out := make([]scored, len(top))
	taken := make(map[int]bool, len(top))
	for n, i := range top {
		out[n] = all[i]
		taken[i] = true
	}
	rest := all[:0]
	for i := range all {
		if !taken[i] {
			rest = append(rest, all[i])
		}
	}
	*s = rest
	return out
}

// score is ConceptSimilarity(sig, e) given the number of concepts they
// share (both hold distinct concepts), and 1 for the same fingerprint as
// Bridge.match scores it.
func score(sig, e *Signature, inter int) float64 {
	// The same fingerprint is the same text, so the same concepts: compare
	// the 64 bytes only then.
	if inter == len(sig.KeyConcepts) && inter == len(e.KeyConcepts) && sig.Fingerprint == e.Fingerprint {
		return 1
	}
	jac := 1.0
	if union := len(sig.KeyConcepts) + len(e.KeyConcepts) - inter; union > 0 {
		jac = float64(inter) / float64(union)
	}
	var tools float64
	if len(sig.ToolSequence) > 0 && len(e.ToolSequence) > 0 {
		n := 0
		for _, t := range e.ToolSequence {
			if slices.Contains(sig.ToolSequence, t) {
				n++
			}
		}
		tools = float64(n) / float64(max(len(sig.ToolSequence), len(e.ToolSequence)))
	}
	return weighted(jac, tools, sig, e)
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

// Candidates implements Source. In concept-only mode the answer is what a
// scan of every trajectory the caller may see would give (TestIndexEqualsScan).
func (s IndexSource) Candidates(ctx context.Context, spec h4r.Specialist, sig *Signature, limit int) ([]Candidate, error) {
	if !s.Index.Loaded() {
		if s.Fallback == nil {
			return nil, errors.New("the trajectory index has not loaded yet")
		}
		return s.Fallback.Candidates(ctx, spec, sig, limit)
	}
	related, rest := s.Index.rank(sig, s.Floor)
	limits := s.Budget
	limits.MaxItems = limit
	out := make([]Candidate, 0, limit)
	for part := 0; part < 2 && len(out) < limit; part++ {
		ranked := related
		if part == 1 {
			ranked = rest()
		}
		for len(ranked) > 0 && len(out) < limit {
			chunk := takeBest(&ranked, limit)
			items := make([]*h4r.Item, len(chunk))
			for i, c := range chunk {
				items[i] = c.e.item
			}
			o := s.Slicer.Slice(ctx, spec, items, limits)
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			kept := 0
			for _, v := range o.Verdicts {
				if v.Reason == h4r.ReasonKept && v.Delivered != nil && len(out) < limit {
					out = append(out, candidateOf(v.Delivered.ID, v.Delivered.Text, v.Delivered.Content))
					kept++
				}
			}
			if kept == 0 && o.Failed == len(items) && o.Err != nil {
				// No decision could be made: the policy is down, which for
				// the caller is the storage failure of EHR-1.
				return nil, fmt.Errorf("deciding on trajectories: %w", o.Err)
			}
		}
	}
	return out, nil
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
