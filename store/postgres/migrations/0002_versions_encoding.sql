-- The last version of each deleted id. An id written again after a delete
-- continues from it rather than restarting at 1: policy decisions and
-- delivery sizes are cached by (id, version), and a reused version would
-- hand the deleted item's decision to a different item.
CREATE TABLE deleted_versions (
    id      text COLLATE "C" PRIMARY KEY,
    version integer NOT NULL
);

-- The tiktoken encoding tokens was counted with. When the configured
-- encoding changes, the store recounts the rows whose encoding differs, at
-- open, so that budgets never use counts of another encoding. '' marks rows
-- written before this column existed: they are recounted once.
ALTER TABLE items ADD COLUMN token_encoding text NOT NULL DEFAULT '';
