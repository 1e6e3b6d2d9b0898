-- Items. seq is an INTEGER PRIMARY KEY so that the rowid the full-text index
-- points at never changes, not even on VACUUM. Times are UTC text of fixed
-- width (see timeLayout in store.go) so that they compare as strings.
-- metadata is the flat JSON object sources.Metadata marshals, so that
-- json_extract reaches any key; the store-maintained fields have their own
-- columns and are laid over it when an item is read.
CREATE TABLE items (
    seq              INTEGER PRIMARY KEY,
    id               TEXT    NOT NULL UNIQUE,
    kind             TEXT    NOT NULL,
    text             TEXT    NOT NULL,
    content          TEXT CHECK (content IS NULL OR json_valid(content)),
    metadata         TEXT    NOT NULL CHECK (json_valid(metadata)),
    created_at       TEXT    NOT NULL,
    updated_at       TEXT    NOT NULL,
    version          INTEGER NOT NULL,
    access_count     INTEGER NOT NULL DEFAULT 0,
    last_accessed_at TEXT,
    byte_size        INTEGER NOT NULL,
    tokens           INTEGER NOT NULL
) STRICT;

CREATE INDEX items_kind ON items (kind);
CREATE INDEX items_created_at ON items (created_at);

-- Tags, one row per (item, tag), for the "all tags required" filter.
CREATE TABLE item_tags (
    item_id TEXT NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    tag     TEXT NOT NULL,
    PRIMARY KEY (item_id, tag)
) STRICT, WITHOUT ROWID;

CREATE INDEX item_tags_tag ON item_tags (tag, item_id);

-- Links are directed edges from the item that holds them. The target is not
-- a foreign key: it may be ingested later. position keeps the item's order.
CREATE TABLE links (
    source   TEXT    NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    target   TEXT    NOT NULL,
    type     TEXT    NOT NULL,
    strength REAL    NOT NULL,
    PRIMARY KEY (source, position)
) STRICT, WITHOUT ROWID;

CREATE INDEX links_target ON links (target, source);

-- Full-text index over items.text, stored outside (content='items') and kept
-- in sync by the triggers below.
CREATE VIRTUAL TABLE items_fts USING fts5 (
    text,
    content = 'items',
    content_rowid = 'seq',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER items_fts_insert AFTER INSERT ON items BEGIN
    INSERT INTO items_fts (rowid, text) VALUES (new.seq, new.text);
END;

CREATE TRIGGER items_fts_delete AFTER DELETE ON items BEGIN
    INSERT INTO items_fts (items_fts, rowid, text) VALUES ('delete', old.seq, old.text);
END;

-- A replace that keeps the text does not touch the index.
CREATE TRIGGER items_fts_update AFTER UPDATE OF text ON items
WHEN old.text IS NOT new.text BEGIN
    INSERT INTO items_fts (items_fts, rowid, text) VALUES ('delete', old.seq, old.text);
    INSERT INTO items_fts (rowid, text) VALUES (new.seq, new.text);
END;
