-- Typed entity links (docs/decisions.md): a link may name what kind of entity its
-- target is ('' for an item; epic, file, pattern, …, which need not be
-- items) and say in a sentence why it matters. The index serves "which
-- items link to this entity, by this link type" (decision precedent
-- queries), which links_target (target, source) cannot narrow by type.
ALTER TABLE links ADD COLUMN target_type TEXT NOT NULL DEFAULT '';
ALTER TABLE links ADD COLUMN context     TEXT NOT NULL DEFAULT '';

CREATE INDEX links_target_type ON links (target, type, source);
