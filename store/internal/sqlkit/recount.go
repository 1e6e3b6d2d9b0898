package sqlkit

import (
	"encoding/json"
	"fmt"

	"github.com/h4r/h4r"
)

// RecountBatch is how many rows one recount transaction rewrites: small enough
// not to hold the write lock for long while a store opens.
const RecountBatch = 500

// RecountTokens returns the tokens of the item as delivered (what budgets
// measure), given its stored columns; content is its JSON, or nil.
func RecountTokens(count func(string) int, id, kind, text string, content []byte) (int, error) {
	it := h4r.Item{ID: id, Kind: kind, Text: text}
	if content != nil {
		if err := json.Unmarshal(content, &it.Content); err != nil {
			return 0, fmt.Errorf("reading the content of item %q: %w", id, err)
		}
	}
	delivered, err := it.Delivered().Encode()
	if err != nil {
		return 0, err
	}
	return count(string(delivered)), nil
}
