// Package jsonstrict decodes outside JSON (request bodies, envelopes, item
// files, configuration files) strictly, and names the offending value by its
// full JSON path in every error.
//
// encoding/json is lenient where H4R must not be: it matches keys to fields
// case-insensitively (a later "METADATA" replaces "metadata"), keeps the last
// of duplicate keys, rewrites invalid UTF-8 and lone UTF-16 surrogates to
// U+FFFD (so two different ids collide), ignores null in a list of strings
// and drops extra elements of an array. Its errors name a Go field path at
// best. Decode therefore first walks the document token by token against the
// target's Go type, tracking the JSON path ("items[3].metadata.trust"), and
// refuses all of that; only a document that passes is handed to
// encoding/json to fill the value.
//
// Every error Decode returns for bad input is an *h4r.Error with code
// h4r.EINVALID whose Field is the path of the offending value, prefixed by
// the caller's field. A type with its own UnmarshalJSON (h4r.Metadata,
// h4r.Weights, time.Time, …) decides about its value itself; an *h4r.Error it
// returns names the offending part relative to that value ("trust", "" for
// the value itself, "[2]" for an element), and Decode prefixes it with the
// value's path.
//
// Decode works out the JSON members of each struct type it meets by
// reflection, and forgets them when it returns. A Decoder keeps them for
// the next document: the server decodes its request bodies with one, since
// for a small body that work is more than half of a fresh Decode
// (BenchmarkDecodeSmall).
package jsonstrict
