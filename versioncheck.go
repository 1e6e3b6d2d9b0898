package h4r

import "errors"

// ErrVersionConflict is the error of a conditional write (VersionCheck)
// that found its item at another version: another writer came between the
// caller's read and its write. Nothing was written; read again and retry.
var ErrVersionConflict = errors.New("the item changed since it was read")

// VersionCheck makes a write conditional, as a compare-and-swap on the
// store-maintained version: the write happens only if the item ID is at
// Version (0: no such item) inside the write's own transaction. A
// read-modify-write of one item (a trace's outcome against a re-ingest of
// it) is then atomic however many writers and replicas there are.
type VersionCheck struct {
	ID      string
	Version int
}
