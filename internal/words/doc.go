// Package words splits text into lower-cased runs of letters and digits,
// the unit the pack builder's TL;DR, the affordance rules and other
// whole-word matchers compare. It gives what
// strings.FieldsFunc(strings.ToLower(s), notLetterOrDigit) gives, without
// decoding runes and calling a predicate per character when the text is
// ASCII: every pack splits the text of each item it delivers several
// times over.
package words
