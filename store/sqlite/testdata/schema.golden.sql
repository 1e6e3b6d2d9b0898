-- index item_tags_tag
CREATE INDEX item_tags_tag ON item_tags (tag, item_id);

-- index items_created_at
CREATE INDEX items_created_at ON items (created_at);

-- index items_kind
CREATE INDEX items_kind ON items (kind);

-- index links_target
CREATE INDEX links_target ON links (target, source);

-- index links_target_type
CREATE INDEX links_target_type ON links (target, type, source);

-- index pack_feedback_pack
CREATE INDEX pack_feedback_pack ON pack_feedback (pack_id);

-- table deleted_versions
CREATE TABLE deleted_versions (
    id      TEXT    PRIMARY KEY,
    version INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- table embedder_models
CREATE TABLE embedder_models (
    kind       TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    data       BLOB NOT NULL,
    updated_at TEXT NOT NULL
) STRICT;

-- table graph_generation
CREATE TABLE graph_generation (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    generation INTEGER NOT NULL
) STRICT;

-- table item_generation
CREATE TABLE item_generation (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    generation INTEGER NOT NULL
) STRICT;

-- table item_tags
CREATE TABLE item_tags (
    item_id TEXT NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    tag     TEXT NOT NULL,
    PRIMARY KEY (item_id, tag)
) STRICT, WITHOUT ROWID;

-- table item_vectors
CREATE TABLE item_vectors (
    item_id TEXT PRIMARY KEY REFERENCES items (id) ON DELETE CASCADE,
    model   TEXT NOT NULL,
    vector  BLOB NOT NULL
) STRICT;

-- table items
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
, token_encoding TEXT NOT NULL DEFAULT '') STRICT;

-- table links
CREATE TABLE links (
    source   TEXT    NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    target   TEXT    NOT NULL,
    type     TEXT    NOT NULL,
    strength REAL    NOT NULL, target_type TEXT NOT NULL DEFAULT '', context     TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (source, position)
) STRICT, WITHOUT ROWID;

-- table pack_feedback
CREATE TABLE pack_feedback (
    seq          INTEGER PRIMARY KEY,
    pack_id      TEXT NOT NULL,
    principal_id TEXT NOT NULL,
    verdict      TEXT NOT NULL CHECK (verdict IN ('useful', 'partial', 'wrong')),
    notes        TEXT NOT NULL,
    query        TEXT NOT NULL,
    result_ids   TEXT NOT NULL CHECK (json_valid(result_ids)),
    created_at   TEXT NOT NULL
) STRICT;

-- table packs
CREATE TABLE packs (
    seq             INTEGER PRIMARY KEY,
    id              TEXT    NOT NULL UNIQUE,
    principal_id    TEXT    NOT NULL,
    query           TEXT    NOT NULL,
    request         TEXT    NOT NULL CHECK (json_valid(request)),
    result_ids      TEXT    NOT NULL CHECK (json_valid(result_ids)),
    policy_revision TEXT    NOT NULL,
    created_at      TEXT    NOT NULL
) STRICT;

-- table schema_migrations
CREATE TABLE schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at TEXT NOT NULL
	) STRICT;

-- table text_generation
CREATE TABLE text_generation (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    generation INTEGER NOT NULL
) STRICT;

-- table vector_generation
CREATE TABLE vector_generation (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    generation INTEGER NOT NULL
) STRICT;

-- trigger item_vectors_delete
CREATE TRIGGER item_vectors_delete AFTER DELETE ON item_vectors BEGIN
    UPDATE vector_generation SET generation = generation + 1;
END;

-- trigger item_vectors_insert
CREATE TRIGGER item_vectors_insert AFTER INSERT ON item_vectors BEGIN
    UPDATE vector_generation SET generation = generation + 1;
END;

-- trigger item_vectors_update
CREATE TRIGGER item_vectors_update AFTER UPDATE ON item_vectors BEGIN
    UPDATE vector_generation SET generation = generation + 1;
END;

-- trigger items_cache_delete
CREATE TRIGGER items_cache_delete AFTER DELETE ON items BEGIN
    UPDATE item_generation SET generation = generation + 1;
END;

-- trigger items_cache_insert
CREATE TRIGGER items_cache_insert AFTER INSERT ON items BEGIN
    UPDATE item_generation SET generation = generation + 1;
END;

-- trigger items_cache_update
CREATE TRIGGER items_cache_update AFTER UPDATE ON items BEGIN
    UPDATE item_generation SET generation = generation + 1;
END;

-- trigger items_graph_delete
CREATE TRIGGER items_graph_delete AFTER DELETE ON items BEGIN
    UPDATE graph_generation SET generation = generation + 1;
END;

-- trigger items_graph_insert
CREATE TRIGGER items_graph_insert AFTER INSERT ON items BEGIN
    UPDATE graph_generation SET generation = generation + 1;
END;

-- trigger items_graph_rename
CREATE TRIGGER items_graph_rename AFTER UPDATE OF id ON items BEGIN
    UPDATE graph_generation SET generation = generation + 1;
END;

-- trigger items_text_delete
CREATE TRIGGER items_text_delete AFTER DELETE ON items BEGIN
    UPDATE text_generation SET generation = generation + 1;
END;

-- trigger items_text_insert
CREATE TRIGGER items_text_insert AFTER INSERT ON items BEGIN
    UPDATE text_generation SET generation = generation + 1;
END;

-- trigger items_text_update
CREATE TRIGGER items_text_update AFTER UPDATE OF text, id, seq ON items
WHEN old.text IS NOT new.text OR old.id IS NOT new.id OR old.seq IS NOT new.seq BEGIN
    UPDATE text_generation SET generation = generation + 1;
END;

-- trigger links_cache_delete
CREATE TRIGGER links_cache_delete AFTER DELETE ON links BEGIN
    UPDATE item_generation SET generation = generation + 1;
END;

-- trigger links_cache_insert
CREATE TRIGGER links_cache_insert AFTER INSERT ON links BEGIN
    UPDATE item_generation SET generation = generation + 1;
END;

-- trigger links_cache_update
CREATE TRIGGER links_cache_update AFTER UPDATE ON links BEGIN
    UPDATE item_generation SET generation = generation + 1;
END;

-- trigger links_graph_delete
CREATE TRIGGER links_graph_delete AFTER DELETE ON links BEGIN
    UPDATE graph_generation SET generation = generation + 1;
END;

-- trigger links_graph_insert
CREATE TRIGGER links_graph_insert AFTER INSERT ON links BEGIN
    UPDATE graph_generation SET generation = generation + 1;
END;

-- trigger links_graph_update
CREATE TRIGGER links_graph_update AFTER UPDATE ON links BEGIN
    UPDATE graph_generation SET generation = generation + 1;
END;

