// Package jsonappend appends JSON values to a byte slice exactly as
// encoding/json writes them (json.Marshal, and an Encoder with its
// defaults): strings with <, > and & escaped, invalid UTF-8 replaced,
// numbers in the same notation. A hand-written encoder of a hot type
// builds on it and is tested byte for byte against encoding/json, so that
// a client never sees which of the two wrote an answer.
package jsonappend
