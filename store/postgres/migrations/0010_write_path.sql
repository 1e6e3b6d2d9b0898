-- Every write adds its items' term counts to term_df, thousands of rows per
-- batch of documents. With pages left half empty the new row version of a
-- count fits on the page of the old one (a HOT update), so the primary key
-- is not written again for every count a write changes. CLUSTER rewrites
-- the rows already there with the new fill factor.
ALTER TABLE term_df SET (fillfactor = 50);
CLUSTER term_df USING term_df_pkey;

-- The change logs are stamped once per transaction, not once per logged
-- row: a deferred trigger on a row per transaction in change_stamps (the
-- pending generation -xid, inserted by the statements that log and
-- deleted by the stamp) replaces the deferred triggers on every row of
-- graph_changes and item_changes, which ran a function for each of a
-- write's items and links at commit.
CREATE TABLE change_stamps (
    gen bigint PRIMARY KEY
);

CREATE OR REPLACE FUNCTION graph_log(ids text[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF cardinality(ids) = 0 THEN
        RETURN;
    END IF;
    INSERT INTO graph_changes (gen, item_id) SELECT DISTINCT -txid_current(), u FROM unnest(ids) AS u;
    INSERT INTO change_stamps (gen) VALUES (-txid_current()) ON CONFLICT DO NOTHING;
END $$;

CREATE OR REPLACE FUNCTION item_log(ids text[], kinds text[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF cardinality(ids) = 0 THEN
        RETURN;
    END IF;
    INSERT INTO item_changes (gen, item_id, kind) SELECT DISTINCT -txid_current(), u.id, u.kind FROM unnest(ids, kinds) AS u (id, kind);
    INSERT INTO change_stamps (gen) VALUES (-txid_current()) ON CONFLICT DO NOTHING;
    -- Wakes the followers listening (at commit; one per transaction).
    PERFORM pg_notify('h4r_item_changes', current_schema());
END $$;

-- Stamps the transaction's pending rows of both logs, graph first, so
-- that every committing write takes the two state rows in one order.
CREATE OR REPLACE FUNCTION stamp_changes() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    g bigint;
BEGIN
    DELETE FROM change_stamps WHERE gen = NEW.gen;
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

DROP TRIGGER graph_changes_stamp ON graph_changes;
DROP TRIGGER item_changes_stamp ON item_changes;
CREATE CONSTRAINT TRIGGER change_stamps_stamp AFTER INSERT ON change_stamps
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION stamp_changes();
