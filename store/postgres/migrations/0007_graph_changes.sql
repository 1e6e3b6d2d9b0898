-- The link graph each replica keeps in memory for hops follows the writes
-- of every replica through a generation and a log of the items whose
-- presence or links changed. Every statement that inserts or deletes
-- items, or inserts, updates or deletes links, raises graph_state.gen and
-- logs its items at the new generation, from triggers, so that no write
-- path (cascades included) can miss it. The row lock on graph_state, held
-- to commit, orders generations as commits: a replica that has applied
-- every change up to generation N reads those after N and misses none.
-- Writers take the corpus_stats lock first (lockStats), then this one.
-- Changes up to pruned have been deleted; a replica further behind
-- reloads the whole graph.
CREATE TABLE graph_state (
    id     integer PRIMARY KEY CHECK (id = 1),
    gen    bigint NOT NULL,
    pruned bigint NOT NULL
);
INSERT INTO graph_state (id, gen, pruned) VALUES (1, 0, 0);

CREATE TABLE graph_changes (
    gen     bigint NOT NULL,
    item_id text COLLATE "C" NOT NULL,
    at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX graph_changes_gen ON graph_changes (gen);

CREATE FUNCTION graph_log(ids text[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    g bigint;
BEGIN
    IF cardinality(ids) = 0 THEN
        RETURN;
    END IF;
    UPDATE graph_state SET gen = gen + 1 WHERE id = 1 RETURNING gen INTO g;
    INSERT INTO graph_changes (gen, item_id) SELECT DISTINCT g, u FROM unnest(ids) AS u;
END $$;

CREATE FUNCTION graph_items_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM graph_log(ARRAY(SELECT id FROM new_rows));
    RETURN NULL;
END $$;

CREATE FUNCTION graph_items_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM graph_log(ARRAY(SELECT id FROM old_rows));
    RETURN NULL;
END $$;

CREATE FUNCTION graph_links_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM graph_log(ARRAY(SELECT source FROM new_rows));
    RETURN NULL;
END $$;

CREATE FUNCTION graph_links_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM graph_log(ARRAY(SELECT source FROM old_rows));
    RETURN NULL;
END $$;

CREATE FUNCTION graph_links_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM graph_log(ARRAY(SELECT source FROM old_rows UNION SELECT source FROM new_rows));
    RETURN NULL;
END $$;

CREATE TRIGGER graph_items_insert AFTER INSERT ON items
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION graph_items_inserted();
CREATE TRIGGER graph_items_delete AFTER DELETE ON items
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION graph_items_deleted();
CREATE TRIGGER graph_links_insert AFTER INSERT ON links
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION graph_links_inserted();
CREATE TRIGGER graph_links_delete AFTER DELETE ON links
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION graph_links_deleted();
CREATE TRIGGER graph_links_update AFTER UPDATE ON links
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION graph_links_updated();
