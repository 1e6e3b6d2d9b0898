package app

import (
	"context"

	"github.com/h4r/h4r"
)

// WriteGuard admits or refuses a write before it reaches the store (the
// quotas of package tenant). Admit reads the store as it is, and returns
// what to call once the write succeeded.
type WriteGuard interface {
	Admit(ctx context.Context, s Store, items []h4r.Item, deletes []string) (done func(), err error)
}

// WithWriteGuard puts g in front of every write of the service: the HTTP
// routes', the memory tools', the trace consumer's and the jobs'.
func WithWriteGuard(g WriteGuard) Option { return func(o *options) { o.guard = g } }

// guardedStore asks the guard before each write. It reads through the
// store it wraps, so that the guard sees what the write would change.
type guardedStore struct {
	Store
	guard WriteGuard
}

func (g *guardedStore) admit(ctx context.Context, items []h4r.Item, deletes []string, write func() error) error {
	done, err := g.guard.Admit(ctx, g.Store, items, deletes)
	if err != nil {
		return err
	}
	if err := write(); err != nil {
		return err
	}
	done()
	return nil
}

func (g *guardedStore) Upsert(ctx context.Context, items []h4r.Item) (ids []string, err error) {
	err = g.admit(ctx, items, nil, func() error { ids, err = g.Store.Upsert(ctx, items); return err })
	return ids, err
}

func (g *guardedStore) Replace(ctx context.Context, items []h4r.Item, deletes []string) (ids []string, err error) {
	err = g.admit(ctx, items, deletes, func() error { ids, err = g.Store.Replace(ctx, items, deletes); return err })
	return ids, err
}

func (g *guardedStore) ReplaceIf(ctx context.Context, check h4r.VersionCheck, items []h4r.Item, deletes []string) (ids []string, err error) {
	err = g.admit(ctx, items, deletes, func() error { ids, err = g.Store.ReplaceIf(ctx, check, items, deletes); return err })
	return ids, err
}

func (g *guardedStore) Delete(ctx context.Context, id string) error {
	return g.admit(ctx, nil, []string{id}, func() error { return g.Store.Delete(ctx, id) })
}
