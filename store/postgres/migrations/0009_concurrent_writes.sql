-- Writers no longer serialise on one row. Before, every write locked the
-- corpus_stats row to commit, so writes ran one at a time across replicas.
--
-- The corpus size and total length are kept in 16 shard rows; a write
-- claims a shard no other write holds (FOR UPDATE SKIP LOCKED) and adds its
-- deltas there, and readers sum the shards. Document frequencies are kept
-- per (term, shard) in term_df the same way, so that two writers never wait
-- on a common term's counter. The sums are exact in every snapshot: each
-- delta commits with the postings it counts.
CREATE TABLE stats_shards (
    shard     smallint PRIMARY KEY,
    n_docs    bigint NOT NULL DEFAULT 0,
    total_len bigint NOT NULL DEFAULT 0
);
INSERT INTO stats_shards (shard, n_docs, total_len) SELECT 0, n_docs, total_len FROM corpus_stats;
INSERT INTO stats_shards (shard) SELECT generate_series(1, 15);

CREATE TABLE term_df (
    term_id integer NOT NULL,
    shard   smallint NOT NULL,
    df      integer NOT NULL,
    PRIMARY KEY (term_id, shard)
);
INSERT INTO term_df (term_id, shard, df) SELECT id, 0, df FROM terms WHERE df <> 0;
ALTER TABLE terms DROP COLUMN df;
-- corpus_stats keeps the reference length impacts are computed with and
-- the planner's mark; the counts moved to stats_shards.
ALTER TABLE corpus_stats DROP COLUMN n_docs, DROP COLUMN total_len;

-- The change logs get their generation at commit, not at the statement:
-- a statement logs its items under the pending generation -xid, and a
-- deferred trigger stamps the transaction's pending rows with the next
-- generation when it commits. The state row lock that orders generations
-- as commits is then held from that stamp to the commit, not from a
-- transaction's first item statement to its commit.
CREATE OR REPLACE FUNCTION graph_log(ids text[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF cardinality(ids) = 0 THEN
        RETURN;
    END IF;
    INSERT INTO graph_changes (gen, item_id) SELECT DISTINCT -txid_current(), u FROM unnest(ids) AS u;
END $$;

CREATE OR REPLACE FUNCTION item_log(ids text[], kinds text[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF cardinality(ids) = 0 THEN
        RETURN;
    END IF;
    INSERT INTO item_changes (gen, item_id, kind) SELECT DISTINCT -txid_current(), u.id, u.kind FROM unnest(ids, kinds) AS u (id, kind);
    -- Wakes the followers listening (at commit; one per transaction).
    PERFORM pg_notify('h4r_item_changes', current_schema());
END $$;

-- Stamps the transaction's pending rows of both logs, graph first, so
-- that every committing write takes the two state rows in one order. It
-- fires once per logged row; the first stamps them all and marks the
-- transaction stamped.
CREATE FUNCTION stamp_changes() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    g bigint;
BEGIN
    IF NEW.gen >= 0 OR current_setting('h4r.changes_stamped', true) = NEW.gen::text THEN
        RETURN NULL;
    END IF;
    PERFORM set_config('h4r.changes_stamped', NEW.gen::text, true);
    IF EXISTS (SELECT 1 FROM graph_changes WHERE gen = NEW.gen) THEN
        UPDATE graph_state SET gen = gen + 1 WHERE id = 1 RETURNING gen INTO g;
        UPDATE graph_changes SET gen = g WHERE gen = NEW.gen;
    END IF;
    IF EXISTS (SELECT 1 FROM item_changes WHERE gen = NEW.gen) THEN
        UPDATE item_change_state SET gen = gen + 1 WHERE id = 1 RETURNING gen INTO g;
        UPDATE item_changes SET gen = g WHERE gen = NEW.gen;
    END IF;
    RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER graph_changes_stamp AFTER INSERT ON graph_changes
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION stamp_changes();
CREATE CONSTRAINT TRIGGER item_changes_stamp AFTER INSERT ON item_changes
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION stamp_changes();
