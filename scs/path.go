package scs

import "github.com/h4r/h4r"

// Path is a parsed redaction path (h4r.RedactionPath, where its grammar
// lives so that ingest validates metadata.piiFields with it too).
type Path = h4r.RedactionPath

// Roots a redaction path may start from.
const (
	RootText    = h4r.RootText
	RootContent = h4r.RootContent
)

// ParsePath parses a redaction path. An invalid path is an invalid_argument
// error (field "path") saying what is wrong and where.
func ParsePath(p string) (Path, error) { return h4r.ParseRedactionPath(p) }
