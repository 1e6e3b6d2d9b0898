-- One counter, raised by every change to the link graph: an item coming
-- into or going out of existence (a walk passes only through items that
-- exist), and every link written or removed, cascades included. A process
-- keeps the graph in memory for hops and compares this counter to the one
-- it loaded at, as it does vector_generation for vectors, so that writes
-- by another process are seen. A replace updates its item row in place (no
-- change of existence) and rewrites the item's links (which counts).
CREATE TABLE graph_generation (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    generation INTEGER NOT NULL
) STRICT;

INSERT INTO graph_generation (id, generation) VALUES (1, 0);

CREATE TRIGGER items_graph_insert AFTER INSERT ON items BEGIN
    UPDATE graph_generation SET generation = generation + 1;
END;

CREATE TRIGGER items_graph_delete AFTER DELETE ON items BEGIN
    UPDATE graph_generation SET generation = generation + 1;
END;

CREATE TRIGGER items_graph_rename AFTER UPDATE OF id ON items BEGIN
    UPDATE graph_generation SET generation = generation + 1;
END;

CREATE TRIGGER links_graph_insert AFTER INSERT ON links BEGIN
    UPDATE graph_generation SET generation = generation + 1;
END;

CREATE TRIGGER links_graph_update AFTER UPDATE ON links BEGIN
    UPDATE graph_generation SET generation = generation + 1;
END;

CREATE TRIGGER links_graph_delete AFTER DELETE ON links BEGIN
    UPDATE graph_generation SET generation = generation + 1;
END;
