-- Context packs POST /query delivered, kept so that feedback can name them
-- (context_pack_id). seq orders them for the retention limit: the store
-- keeps the newest N. result_ids holds the delivered ids only.
CREATE TABLE packs (
    seq             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id              text        NOT NULL UNIQUE,
    principal_id    text        NOT NULL,
    query           text        NOT NULL,
    request         text        NOT NULL, -- as received
    result_ids      text[]      NOT NULL,
    policy_revision text        NOT NULL,
    created_at      timestamptz NOT NULL
);

-- Verdicts on packs. They copy the pack's query and result ids and have no
-- foreign key: a label outlives its pack's retention.
CREATE TABLE pack_feedback (
    seq          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    pack_id      text        NOT NULL,
    principal_id text        NOT NULL,
    verdict      text        NOT NULL CHECK (verdict IN ('useful', 'partial', 'wrong')),
    notes        text        NOT NULL,
    query        text        NOT NULL,
    result_ids   text[]      NOT NULL,
    created_at   timestamptz NOT NULL
);

CREATE INDEX pack_feedback_pack ON pack_feedback (pack_id);
