package h4r

import "context"

// LinkMatch selects items by a link they hold: to Target (an item or
// entity id), of TargetType when not empty, of one of Types when not
// empty.
type LinkMatch struct {
	Target     string
	TargetType string
	Types      []string
}

// ItemQuery lists items, newest first (createdAt, then id, both
// descending): those Filters pass and, when Linked is set, that hold a
// link it matches. It is how structured questions ("decisions citing epic
// mj100") and reads by filter alone (memory.read listing a scope) are
// asked of a store; ranked search is a Generator's job.
type ItemQuery struct {
	Filters Filters
	Linked  *LinkMatch
	Limit   int // 0: DefaultFindLimit
}

// Limits of ItemQuery.
const (
	DefaultFindLimit = 100
	MaxFindLimit     = 10000
)

// Finder answers item queries (store/sqlite and store/postgres).
type Finder interface {
	Find(ctx context.Context, q ItemQuery) ([]*Item, error)
}

// FindLimit checks q's limit and applies DefaultFindLimit when it is 0.
func (q ItemQuery) FindLimit() (int, error) {
	if q.Linked != nil && q.Linked.Target == "" {
		return 0, Errorf(EINVALID, "target", "a link match needs a target")
	}
	switch {
	case q.Limit < 0:
		return 0, Errorf(EINVALID, "limit", "limit must be >= 0, got %d", q.Limit)
	case q.Limit == 0:
		return DefaultFindLimit, nil
	case q.Limit > MaxFindLimit:
		return 0, Errorf(EINVALID, "limit", "limit must be at most %d, got %d", MaxFindLimit, q.Limit)
	}
	return q.Limit, nil
}
