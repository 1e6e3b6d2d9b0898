-- One counter, raised by every change to what the in-memory full-text index
-- (sources/bm25) holds: an item coming into or going out of existence, and
-- a change of an item's text, id or seq. A process keeps the index in
-- memory and compares this counter to the one it holds the index at, as it
-- does vector_generation for vectors, so that writes by another process
-- are seen. The index itself is never written to disk: the items table is
-- the only truth, and the index is rebuilt from it at open.
CREATE TABLE text_generation (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    generation INTEGER NOT NULL
) STRICT;

INSERT INTO text_generation (id, generation) VALUES (1, 0);

CREATE TRIGGER items_text_insert AFTER INSERT ON items BEGIN
    UPDATE text_generation SET generation = generation + 1;
END;

CREATE TRIGGER items_text_delete AFTER DELETE ON items BEGIN
    UPDATE text_generation SET generation = generation + 1;
END;

-- A replace that keeps the text (an access count, a metadata change) does
-- not count.
CREATE TRIGGER items_text_update AFTER UPDATE OF text, id, seq ON items
WHEN old.text IS NOT new.text OR old.id IS NOT new.id OR old.seq IS NOT new.seq BEGIN
    UPDATE text_generation SET generation = generation + 1;
END;
