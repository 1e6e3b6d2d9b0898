// Package bm25 is an in-memory inverted index that returns the exact BM25
// top k of a query without scoring every document that matches it.
//
// The embedded store's full-text generator used to ask SQLite FTS5 for the
// bm25() of every row holding any query word and sort them all: a common
// word made that cost grow with the corpus. Here posting lists are split
// into blocks that carry an upper bound of their scores, and MaxScore (or
// block-max WAND) skips the terms and blocks that cannot reach the current
// k-th score.
// The result is proven equal, scores and tie order included, to the plain
// exhaustive definition (Index.Reference) by the tests.
//
// Analyze is the one analysis of text, shared by documents and queries:
// Unicode words, lower-cased, general diacritics removed, Snowball English
// stems. Query turns a query's terms, as package analysis makes them (stop
// words, query-term counts), into the index's terms and counts.
//
// The index keeps no state on disk: its owner (the SQLite store) rebuilds
// it from its durable rows at open and applies each committed write. It
// keeps no document's terms either: a delete or a replace gives the
// analysis of the text it removes (Index.Delete), which the owner reads
// from the row it changes, and a fingerprint per document refuses any
// other. See
// PERFORMANCE.md for the measured designs and the persistence note.
package bm25
