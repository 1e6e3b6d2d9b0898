package ann

import (
	"sync"

	"github.com/h4r/h4r/sources/internal/vecindex"
)

// Ranker ranks the vectors of an index for one query, for a store's
// search: Top(n) returns the best n approximate hits, and a filtered search
// asks again with a larger n until enough pass its filters. Each larger n
// scans proportionally more lists (over-fetching in step with how few
// items the filters pass), up to the exact scan, whose scores are kept and
// reused while the index is unchanged. It holds the index's read lock
// around each look.
type Ranker struct {
	lock     sync.Locker
	x        *Index
	q        []float32
	minScore float64

	// The exact scan, once made, at the index's write count then.
	ids     []string
	scores  []float32
	floor   float64
	changes uint64
}

// NewRanker returns a ranker of x's vectors for q that leaves out vectors
// that cannot reach minScore; lock guards x for reading.
func NewRanker(lock sync.Locker, x *Index, q []float32, minScore float64) *Ranker {
	return &Ranker{lock: lock, x: x, q: q, minScore: minScore}
}

// Top returns the best n vectors by approximate score (best first; only
// those within the approximation's slack of minScore) and whether they
// were ranked among every vector (exact) rather than among those of the
// lists scanned. When it returns fewer than n and exact, no vector was
// left out.
func (r *Ranker) Top(n int) ([]vecindex.Scored, bool) {
	r.lock.Lock()
	defer r.lock.Unlock()
	if r.scores != nil && r.changes == r.x.changes {
		return vecindex.Top(r.ids, r.scores, n, r.floor), true
	}
	ids, scores, slack, exact := r.x.Search(r.q, n)
	floor := r.minScore - slack
	if exact {
		r.ids, r.scores, r.floor, r.changes = ids, scores, floor, r.x.changes
	}
	return vecindex.Top(ids, scores, n, floor), exact
}
