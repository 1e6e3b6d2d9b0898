-- What a built-in embedder learned from the corpus (the learned embedder's
-- term vectors), one row per kind of embedder, replaced when it learns
-- again. Vectors keep the model's name beside them; this row is what embeds
-- new texts and queries into the same space after a restart, on every
-- replica.
CREATE TABLE embedder_models (
    kind       TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    data       BYTEA NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
