-- Items. seq is the key the postings point at; it never changes for an id,
-- a replace updates the row in place. id, link ends and terms are C-collated
-- so that they sort by bytes, as the contract (and Go) order them.
-- metadata is the flat JSON object sources.Metadata marshals; containment
-- (@>) on it is type-strict, as metadata filters are. The store-maintained
-- fields have their own columns and are laid over it when an item is read.
CREATE TABLE items (
    seq              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id               text COLLATE "C" NOT NULL UNIQUE,
    kind             text NOT NULL,
    text             text NOT NULL,
    content          jsonb,
    metadata         jsonb NOT NULL,
    tags             text[] NOT NULL DEFAULT '{}',
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    version          integer NOT NULL,
    access_count     bigint NOT NULL DEFAULT 0,
    last_accessed_at timestamptz,
    byte_size        integer NOT NULL,
    tokens           integer NOT NULL,
    doc_len          integer NOT NULL -- BM25 length: indexed terms, repeats counted
);
CREATE INDEX items_kind ON items (kind);
CREATE INDEX items_created_at ON items (created_at);
CREATE INDEX items_metadata ON items USING gin (metadata jsonb_path_ops);
CREATE INDEX items_tags ON items USING gin (tags);

-- Links are directed edges from the item that holds them. The target is not
-- a foreign key: it may be ingested later. position keeps the item's order.
CREATE TABLE links (
    source   text COLLATE "C" NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    position integer NOT NULL,
    target   text COLLATE "C" NOT NULL,
    type     text NOT NULL,
    strength double precision NOT NULL,
    PRIMARY KEY (source, position)
);
CREATE INDEX links_target ON links (target, source);

-- BM25 term statistics, kept in the ingest transaction: df is the number of
-- items whose text holds the term.
CREATE TABLE terms (
    id   integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    term text COLLATE "C" NOT NULL UNIQUE,
    df   integer NOT NULL CHECK (df >= 0)
);

-- One row: the corpus size and total length for BM25, and the average
-- length the stored impacts were computed with. Every write locks this row
-- first, which serialises writers (across replicas too) and so keeps df,
-- n_docs and total_len exact without deadlocks on hot terms.
CREATE TABLE corpus_stats (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    n_docs    bigint NOT NULL,
    total_len bigint NOT NULL,
    avgdl_ref double precision NOT NULL
);
INSERT INTO corpus_stats (n_docs, total_len, avgdl_ref) VALUES (0, 0, 0);

-- Postings with precomputed BM25 impacts: impact is the tf component with
-- length normalisation, tf·(k1+1) / (tf + k1·(1 − b + b·dl/avgdl_ref)), so a
-- query scores Σ idf·impact. The (term, impact DESC) index lets a query read
-- each term's best postings first and stop after a fixed number (the term
-- cut), index-only. tf is kept so that impacts can be recomputed when the
-- average length drifts. No foreign key: postings are written and removed
-- with their item in one transaction, and a key check per posting is the
-- single largest ingest cost.
CREATE TABLE postings (
    term_id  integer  NOT NULL,
    impact   real     NOT NULL,
    item_seq bigint   NOT NULL,
    tf       smallint NOT NULL
);
CREATE INDEX postings_term_impact ON postings (term_id, impact DESC, item_seq);
CREATE INDEX postings_item ON postings (item_seq);
