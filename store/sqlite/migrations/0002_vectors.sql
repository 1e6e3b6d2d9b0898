-- Item vectors for the embedded exact (cosine) search: one per item, with
-- the model that made it, as little-endian float32 of unit length. They go
-- with the item (ON DELETE CASCADE). Search ignores vectors of another
-- model; h4r reindex rewrites them.
CREATE TABLE item_vectors (
    item_id TEXT PRIMARY KEY REFERENCES items (id) ON DELETE CASCADE,
    model   TEXT NOT NULL,
    vector  BLOB NOT NULL
) STRICT;

-- One counter, raised by every change to item_vectors, cascades included.
-- A process keeps the vectors in memory and compares this counter to the
-- one it loaded at, so that writes by another process (h4r ingest beside
-- h4r serve) are seen.
CREATE TABLE vector_generation (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    generation INTEGER NOT NULL
) STRICT;

INSERT INTO vector_generation (id, generation) VALUES (1, 0);

CREATE TRIGGER item_vectors_insert AFTER INSERT ON item_vectors BEGIN
    UPDATE vector_generation SET generation = generation + 1;
END;

CREATE TRIGGER item_vectors_update AFTER UPDATE ON item_vectors BEGIN
    UPDATE vector_generation SET generation = generation + 1;
END;

CREATE TRIGGER item_vectors_delete AFTER DELETE ON item_vectors BEGIN
    UPDATE vector_generation SET generation = generation + 1;
END;
