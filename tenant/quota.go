package tenant

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
)

// Quota holds a tenant to its item and byte quotas (app.WriteGuard). An
// item's bytes are those of its text and content as JSON; the totals are
// read from the store on the first write and then kept up to date by this
// process, so replicas writing side by side can together overshoot by the
// writes they admit at the same moment.
type Quota struct {
	name     string
	maxItems int
	maxBytes int64

	mu     sync.Mutex
	loaded bool
	items  int
	bytes  int64
}

// NewQuota returns the guard of a tenant's quotas, or nil when it has
// none.
func NewQuota(s Spec) *Quota {
	if s.MaxItems <= 0 && s.MaxBytes <= 0 {
		return nil
	}
	return &Quota{name: s.Name, maxItems: s.MaxItems, maxBytes: s.MaxBytes}
}

// Usage returns the items and bytes counted, loading them if needed.
func (q *Quota) Usage(ctx context.Context, s app.Store) (items int, bytes int64, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.load(ctx, s); err != nil {
		return 0, 0, err
	}
	return q.items, q.bytes, nil
}

func (q *Quota) load(ctx context.Context, s app.Store) error {
	if q.loaded {
		return nil
	}
	var n int
	var b int64
	if err := s.Each(ctx, func(it *h4r.Item) error { n++; b += itemBytes(it); return nil }); err != nil {
		return fmt.Errorf("counting tenant %s's items for its quota: %w", q.name, err)
	}
	q.items, q.bytes, q.loaded = n, b, true
	return nil
}

// Admit refuses a write that would take the tenant past a quota, with a
// resource_exhausted error (429) that says which and by how much. Writes
// that shrink the tenant are always admitted.
func (q *Quota) Admit(ctx context.Context, s app.Store, items []h4r.Item, deletes []string) (func(), error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.load(ctx, s); err != nil {
		return nil, err
	}
	var dItems int
	var dBytes int64
	for i := range items {
		size := itemBytes(&items[i])
		old, err := existing(ctx, s, items[i].ID)
		if err != nil {
			return nil, err
		}
		if old == nil {
			dItems++
			dBytes += size
		} else {
			dBytes += size - itemBytes(old)
		}
	}
	for _, id := range deletes {
		old, err := existing(ctx, s, id)
		if err != nil {
			return nil, err
		}
		if old != nil {
			dItems--
			dBytes -= itemBytes(old)
		}
	}
	if q.maxItems > 0 && dItems > 0 && q.items+dItems > q.maxItems {
		return nil, h4r.Errorf(h4r.EEXHAUSTED, "items", "tenant %s's quota of %d items would be exceeded: it holds %d and this write adds %d; delete items or ask an operator to raise maxItems", q.name, q.maxItems, q.items, dItems)
	}
	if q.maxBytes > 0 && dBytes > 0 && q.bytes+dBytes > q.maxBytes {
		return nil, h4r.Errorf(h4r.EEXHAUSTED, "items", "tenant %s's quota of %d bytes would be exceeded: it holds %d and this write adds %d; delete items or ask an operator to raise maxBytes", q.name, q.maxBytes, q.bytes, dBytes)
	}
	return func() {
		q.mu.Lock()
		q.items += dItems
		q.bytes += dBytes
		q.mu.Unlock()
	}, nil
}

// existing returns the stored item of an id, or nil.
func existing(ctx context.Context, s app.Store, id string) (*h4r.Item, error) {
	if id == "" {
		return nil, nil // the store assigns a new id
	}
	it, err := s.Get(ctx, id)
	var herr *h4r.Error
	if errors.As(err, &herr) && herr.Code == h4r.ENOTFOUND {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading item %q for the quota: %w", id, err)
	}
	return it, nil
}

// itemBytes is what an item counts against the byte quota.
func itemBytes(it *h4r.Item) int64 {
	n := int64(len(it.Text))
	if len(it.Content) > 0 {
		b, _ := json.Marshal(it.Content) // a stored item's content encodes
		n += int64(len(b))
	}
	return n
}
