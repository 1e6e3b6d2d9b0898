-- One counter, raised by every change to what a decoded item holds: an item
-- row inserted, updated (access counts included) or deleted, and every link
-- written or removed, cascades included. A process keeps decoded items in
-- memory for the generators' hits (itemcache.go) and trusts them only while
-- this counter is the one its cache reflects; its own writes move the cache
-- along with them, so a change by another process is what makes it start
-- over.
CREATE TABLE item_generation (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    generation INTEGER NOT NULL
) STRICT;

INSERT INTO item_generation (id, generation) VALUES (1, 0);

CREATE TRIGGER items_cache_insert AFTER INSERT ON items BEGIN
    UPDATE item_generation SET generation = generation + 1;
END;

CREATE TRIGGER items_cache_update AFTER UPDATE ON items BEGIN
    UPDATE item_generation SET generation = generation + 1;
END;

CREATE TRIGGER items_cache_delete AFTER DELETE ON items BEGIN
    UPDATE item_generation SET generation = generation + 1;
END;

CREATE TRIGGER links_cache_insert AFTER INSERT ON links BEGIN
    UPDATE item_generation SET generation = generation + 1;
END;

CREATE TRIGGER links_cache_update AFTER UPDATE ON links BEGIN
    UPDATE item_generation SET generation = generation + 1;
END;

CREATE TRIGGER links_cache_delete AFTER DELETE ON links BEGIN
    UPDATE item_generation SET generation = generation + 1;
END;
