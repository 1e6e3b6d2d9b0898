// Package bench is H4R's benchmark harness: it measures ranking quality
// and latency on labelled data through the real service, searches the
// eight ranking weights and λ, and writes reports (versioned JSON,
// Markdown tables, SVG charts). h4r bench quality|tune|gen|latency is its
// command line.
//
// Datasets are BEIR folders (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv,
// gain 2^g − 1) with an optional h4r-mapping.json that maps extra fields
// onto the item model (dates, links, scores, access counts, a scope per
// query, a category per query); without one, an "xrefs" field is read as
// citation links, which is what the shared cisi collection needs.
//
// A run loads a dataset into a fresh store through app.Open with a fixed
// clock, replays the dataset's access counts as deliveries, and sends every
// query through Engine.ContextPack as a full-clearance specialist with a
// one-byte budget: every candidate is ranked, decided by policy and listed
// in explainability.items, and none is delivered, so the run does not raise
// the access counts that later queries' frequency signal reads.
//
// Tuning never re-queries: each query's candidates and their eight signals
// (and ages, so that λ can change recency) are collected once into a
// TuneQuery cache that ranks exactly as the ranker does (a test holds the
// two equal), and coordinate ascent with random restarts searches that
// cache under k-fold cross-validation over queries.
package bench
