-- How many items the planner's statistics last saw. The store runs ANALYZE
-- itself once the corpus has doubled since (planner.go): a fresh bulk load
-- was queried with plans made for empty tables, 400-750 ms per query on
-- scifact against 17-22 ms after ANALYZE.
ALTER TABLE corpus_stats ADD COLUMN analyzed_docs bigint NOT NULL DEFAULT 0;

-- Autovacuum analyses these tables after 2% of their rows changed rather
-- than the default 10%, so that steady ingest keeps the statistics fresh
-- between the store's own ANALYZE runs.
ALTER TABLE items    SET (autovacuum_analyze_scale_factor = 0.02, autovacuum_analyze_threshold = 1000);
ALTER TABLE postings SET (autovacuum_analyze_scale_factor = 0.02, autovacuum_analyze_threshold = 10000);
ALTER TABLE terms    SET (autovacuum_analyze_scale_factor = 0.02, autovacuum_analyze_threshold = 1000);
