-- Context packs POST /query delivered, kept so that feedback can name them
-- (context_pack_id). seq orders them for the retention limit: the store
-- keeps the newest N. result_ids is a JSON array of the delivered ids only.
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

-- Verdicts on packs. They copy the pack's query and result ids and have no
-- foreign key: a label outlives its pack's retention.
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

CREATE INDEX pack_feedback_pack ON pack_feedback (pack_id);
