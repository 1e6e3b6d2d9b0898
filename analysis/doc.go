// Package analysis turns query text into the terms both stores search for,
// in one place, so that the embedded (SQLite FTS5) and the Postgres store
// ask the same question of their indexes.
//
// Words are split exactly as the stores index them: runs of letters, digits
// and combining marks, lower-cased (SQLite's unicode61 tokenizer; the
// Postgres store feeds to_tsvector the same runs). Stop words are removed
// from the query only — the indexes are untouched — and a word asked twice
// counts twice (query-term frequency, as in Robertson's BM25 and Lucene).
//
// It lives at the root of the module, not under store/internal, because
// the configuration (H4R_STOP_WORDS) and the service wiring in app/ name its
// stop lists as well as the stores.
package analysis
