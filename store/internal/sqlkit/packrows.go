package sqlkit

import "github.com/h4r/h4r"

// PackRequest is the request column of p: the request as received, or "{}"
// for a pack saved without one (the column is JSON and never empty).
func PackRequest(p h4r.StoredPack) string {
	if len(p.Request) == 0 {
		return "{}"
	}
	return string(p.Request)
}

// PackIDs is a result id list as stored: an empty list, never NULL, for a
// pack or verdict with no results.
func PackIDs(ids []string) []string {
	if ids == nil {
		return []string{}
	}
	return ids
}

// PackNotFound is the error of Pack for an id no stored pack has.
func PackNotFound(id string) *h4r.Error {
	return h4r.Errorf(h4r.ENOTFOUND, "context_pack_id", "no context pack with id %q (unknown, or past the retention limit)", id)
}

// VisitFeedback hands each verdict to fn in order, stopping at fn's first error.
// The stores read every verdict first and visit after: fn may take its
// time, and a read transaction (or a pooled connection) is not held
// while it runs.
func VisitFeedback(all []h4r.Feedback, fn func(h4r.Feedback) error) error {
	for _, f := range all {
		if err := fn(f); err != nil {
			return err
		}
	}
	return nil
}
