package demo

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/internal/jsonstrict"
)

// corpus is the demo memory, one JSON item a line.
//
//go:embed items.jsonl
var corpus []byte

// Items parses the embedded corpus. Every call returns new items, so callers
// may change them.
func Items() ([]h4r.Item, error) {
	items, err := parse(corpus)
	if err != nil {
		return nil, fmt.Errorf("parsing the embedded demo corpus: %w", err)
	}
	return items, nil
}

// parse reads JSON Lines: one item per non-blank line, decoded strictly
// (an unknown top-level field is a typo, not data) and validated. Ids must be
// unique and every link must point at an item of the corpus, because a
// corpus with a dangling link would demonstrate a causal graph with holes.
// Errors are invalid_argument and name the line: "line 7.metadata.trust".
func parse(data []byte) ([]h4r.Item, error) {
	var items []h4r.Item
	lineOf := map[string]int{}
	for n, line := range bytes.Split(data, []byte("\n")) {
		field := fmt.Sprintf("line %d", n+1)
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var it h4r.Item
		if err := jsonstrict.Decode(line, &it, field); err != nil {
			return nil, err
		}
		if err := it.Validate(field); err != nil {
			return nil, err
		}
		if first, dup := lineOf[it.ID]; dup {
			return nil, h4r.Errorf(h4r.EINVALID, field+".id", "id %q is already used on line %d", it.ID, first)
		}
		lineOf[it.ID] = n + 1
		items = append(items, it)
	}
	for _, it := range items {
		for i, l := range it.Links {
			if _, ok := lineOf[l.Target]; !ok {
				return nil, h4r.Errorf(h4r.EINVALID, fmt.Sprintf("line %d.links[%d].target", lineOf[it.ID], i),
					"link target %q is not an item of the corpus", l.Target)
			}
		}
	}
	return items, nil
}

// Upserter is the part of a store LoadIfEmpty needs.
type Upserter interface {
	Upsert(ctx context.Context, items []h4r.Item) ([]string, error)
	Count(ctx context.Context) (int, error)
}

// LoadIfEmpty upserts the demo corpus into store when the store holds no
// item, and returns how many items it loaded (0 when the store was not
// empty). Two processes starting at once over one empty store may both load
// it; that is harmless, since an upsert with the same id replaces the item.
func LoadIfEmpty(ctx context.Context, store Upserter) (loaded int, err error) {
	n, err := store.Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("counting the store's items before loading the demo corpus: %w", err)
	}
	if n > 0 {
		return 0, nil
	}
	items, err := Items()
	if err != nil {
		return 0, err
	}
	ids, err := store.Upsert(ctx, items)
	if err != nil {
		return 0, fmt.Errorf("loading the %d items of the demo corpus: %w", len(items), err)
	}
	return len(ids), nil
}
