-- The FTS5 index over items.text is gone: full text comes from the
-- in-memory BM25 index (sources/bm25, rebuilt from items at open, kept in
-- step by text_generation), and nothing searched items_fts any more. Its
-- triggers cost about a fifth of an ingest's write transaction. Dropping
-- the table drops its shadow tables too; the file keeps their pages free
-- until a VACUUM.
DROP TRIGGER items_fts_insert;
DROP TRIGGER items_fts_delete;
DROP TRIGGER items_fts_update;
DROP TABLE items_fts;
