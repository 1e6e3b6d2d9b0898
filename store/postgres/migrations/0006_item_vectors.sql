-- Item vectors for the in-process vector index (no Qdrant, no pgvector):
-- one per item, with the model that made it. code is the compact form every
-- replica loads into memory at start (int8 codes, little-endian, times
-- scale); vector is the exact float32 form (little-endian, unit length) the
-- best candidates are rescored with. They go with the item (ON DELETE
-- CASCADE).
--
-- Replicas follow each other's writes through vseq: every insert, update
-- and delete of a vector takes the next value, and a delete leaves a
-- tombstone. Every write takes the corpus_stats row lock before it touches
-- vectors, so vseq values commit in order: a replica that has applied
-- everything up to vseq N reads the changes after N and misses none.
CREATE SEQUENCE item_vectors_vseq;

CREATE TABLE item_vectors (
    item_id text PRIMARY KEY REFERENCES items (id) ON DELETE CASCADE,
    model   text NOT NULL,
    scale   real NOT NULL,
    code    bytea NOT NULL,
    vector  bytea NOT NULL,
    vseq    bigint NOT NULL DEFAULT nextval('item_vectors_vseq')
);

CREATE INDEX item_vectors_vseq_idx ON item_vectors (vseq);

CREATE TABLE vector_tombstones (
    item_id text NOT NULL,
    vseq    bigint PRIMARY KEY
);

CREATE FUNCTION item_vectors_touch() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.vseq := nextval('item_vectors_vseq');
    RETURN NEW;
END $$;

CREATE TRIGGER item_vectors_update BEFORE UPDATE ON item_vectors
    FOR EACH ROW EXECUTE FUNCTION item_vectors_touch();

CREATE FUNCTION item_vectors_tombstone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO vector_tombstones (item_id, vseq) VALUES (OLD.item_id, nextval('item_vectors_vseq'));
    RETURN OLD;
END $$;

CREATE TRIGGER item_vectors_delete AFTER DELETE ON item_vectors
    FOR EACH ROW EXECUTE FUNCTION item_vectors_tombstone();
