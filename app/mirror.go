package app

import (
	"context"
	"log/slog"

	"github.com/h4r/h4r"
)

// storeMirror is a copy of the store that another technology keeps
// (Qdrant's vectors, Neo4j's graph). sync brings the named ids in step
// with the store, writing present items and removing absent ones.
type storeMirror struct {
	name string
	sync func(ctx context.Context, ids []string) error
}

// mirroredStore is the one decorator over the store: a write goes to the
// store, the source of truth, and then to each mirror in order. A failed
// mirror does not fail the write: the item is stored, the mirror retries
// it in the background, and the log says so. The chain is explicit (App
// keeps the base store and each mirror), so nothing has to unwrap it.
type mirroredStore struct {
	Store
	mirrors []storeMirror
	log     *slog.Logger
}

func (m *mirroredStore) Upsert(ctx context.Context, items []h4r.Item) ([]string, error) {
	ids, err := m.Store.Upsert(ctx, items)
	if err != nil {
		return ids, err
	}
	m.sync(ctx, ids)
	return ids, nil
}

func (m *mirroredStore) Replace(ctx context.Context, items []h4r.Item, deletes []string) ([]string, error) {
	ids, err := m.Store.Replace(ctx, items, deletes)
	if err != nil {
		return ids, err
	}
	m.sync(ctx, append(append([]string(nil), ids...), deletes...))
	return ids, nil
}

func (m *mirroredStore) AddLink(ctx context.Context, id string, l h4r.Link) (bool, error) {
	added, err := m.Store.AddLink(ctx, id, l)
	if err != nil || !added {
		return added, err
	}
	m.sync(ctx, []string{id})
	return added, nil
}

func (m *mirroredStore) ReplaceIf(ctx context.Context, check h4r.VersionCheck, items []h4r.Item, deletes []string) ([]string, error) {
	ids, err := m.Store.ReplaceIf(ctx, check, items, deletes)
	if err != nil {
		return ids, err
	}
	m.sync(ctx, append(append([]string(nil), ids...), deletes...))
	return ids, nil
}

func (m *mirroredStore) Delete(ctx context.Context, id string) error {
	if err := m.Store.Delete(ctx, id); err != nil {
		return err
	}
	m.sync(ctx, []string{id})
	return nil
}

func (m *mirroredStore) sync(ctx context.Context, ids []string) {
	for _, mr := range m.mirrors {
		if err := mr.sync(ctx, ids); err != nil {
			m.log.WarnContext(ctx, "items stored, mirror failed; it will be retried", "mirror", mr.name, "items", len(ids), "error", err)
		}
	}
}
