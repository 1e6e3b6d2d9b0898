package trace

import (
	"github.com/h4r/h4r/internal/jsonstrict"
)

// Decode decodes a CommitTrace strictly: an unknown field, a wrong type
// or a trailing value is an invalid_argument *h4r.Error naming its path.
// The trace is H4R's own wire format (the document's), so a misspelled
// field is an error, not silently lost knowledge.
func Decode(data []byte) (*CommitTrace, error) {
	var t CommitTrace
	if err := jsonstrict.Decode(data, &t, ""); err != nil {
		return nil, err
	}
	return &t, nil
}
