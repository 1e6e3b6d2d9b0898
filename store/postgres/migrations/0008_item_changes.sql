-- A log of the items whose presence, version or kind changed, so that a
-- replica's copies of items (the context bridge's trajectory index) follow
-- the writes of every replica, as the link graph follows graph_changes.
-- Every statement that inserts or deletes items, or updates them to a new
-- version or kind, raises item_change_state.gen and logs each item, with
-- its kind before and after, at the new generation, from triggers, so that
-- no write path can miss it. Updates that leave the version and kind as
-- they were (access counts, token recounts) log nothing. The row lock on
-- item_change_state, held to commit, orders generations as commits: a
-- replica that has applied every change up to generation N reads those
-- after N and misses none. Writers take the corpus_stats lock first
-- (lockStats). Changes up to pruned have been deleted; a replica further
-- behind reloads. Each logging transaction also notifies channel
-- h4r_item_changes with its schema, so that followers read the log at
-- once rather than at their next poll.
CREATE TABLE item_change_state (
    id     integer PRIMARY KEY CHECK (id = 1),
    gen    bigint NOT NULL,
    pruned bigint NOT NULL
);
INSERT INTO item_change_state (id, gen, pruned) VALUES (1, 0, 0);

CREATE TABLE item_changes (
    gen     bigint NOT NULL,
    item_id text COLLATE "C" NOT NULL,
    kind    text NOT NULL,
    at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX item_changes_gen ON item_changes (gen);

CREATE FUNCTION item_log(ids text[], kinds text[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    g bigint;
BEGIN
    IF cardinality(ids) = 0 THEN
        RETURN;
    END IF;
    UPDATE item_change_state SET gen = gen + 1 WHERE id = 1 RETURNING gen INTO g;
    INSERT INTO item_changes (gen, item_id, kind) SELECT DISTINCT g, u.id, u.kind FROM unnest(ids, kinds) AS u (id, kind);
    -- Wakes the followers listening (at commit; one per transaction).
    PERFORM pg_notify('h4r_item_changes', current_schema());
END $$;

CREATE FUNCTION item_changes_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    ids text[];
    kinds text[];
BEGIN
    SELECT coalesce(array_agg(id), '{}'), coalesce(array_agg(kind), '{}') INTO ids, kinds FROM new_rows;
    PERFORM item_log(ids, kinds);
    RETURN NULL;
END $$;

CREATE FUNCTION item_changes_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    ids text[];
    kinds text[];
BEGIN
    SELECT coalesce(array_agg(id), '{}'), coalesce(array_agg(kind), '{}') INTO ids, kinds FROM old_rows;
    PERFORM item_log(ids, kinds);
    RETURN NULL;
END $$;

-- An update logs an item under its kind before and after, so that a
-- follower of either kind sees it come or go.
CREATE FUNCTION item_changes_updated() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    ids text[];
    kinds text[];
BEGIN
    SELECT coalesce(array_agg(c.id), '{}'), coalesce(array_agg(c.kind), '{}') INTO ids, kinds FROM (
        SELECT n.id, n.kind, o.kind AS old_kind FROM new_rows n JOIN old_rows o ON o.id = n.id
        WHERE n.version IS DISTINCT FROM o.version OR n.kind IS DISTINCT FROM o.kind
    ) AS changed, LATERAL (VALUES (changed.id, changed.kind), (changed.id, changed.old_kind)) AS c (id, kind);
    PERFORM item_log(ids, kinds);
    RETURN NULL;
END $$;

CREATE TRIGGER item_changes_insert AFTER INSERT ON items
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION item_changes_inserted();
CREATE TRIGGER item_changes_delete AFTER DELETE ON items
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION item_changes_deleted();
CREATE TRIGGER item_changes_update AFTER UPDATE ON items
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION item_changes_updated();
