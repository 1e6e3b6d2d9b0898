package cypher

import "fmt"

// Constraint makes item ids unique; it also creates the index every MERGE
// and MATCH by id uses.
const Constraint = `CREATE CONSTRAINT h4r_item_id IF NOT EXISTS FOR (n:Item) REQUIRE n.id IS UNIQUE`

// DropLinks removes the relationships leaving the items $ids: an upsert
// replaces an item's links, and a delete removes them. Relationships that
// enter an item are held by other items and stay. A former target that the
// store does not hold and that nothing links to any more goes as well.
const DropLinks = `UNWIND $ids AS id
MATCH (:Item {id: id})-[r]->(t:Item)
DELETE r
WITH DISTINCT t
WHERE NOT t.present AND NOT EXISTS { (t)--() }
DELETE t`

// MergeItems creates or updates the nodes of the items $items, each a map
// {id, kind}. present marks a node the store holds: a link target that is
// not ingested yet, or was deleted while other items still link to it, is a
// node with present = false, and hops never pass through it.
const MergeItems = `UNWIND $items AS it
MERGE (n:Item {id: it.id})
SET n.present = true, n.kind = it.kind`

// CreateLinks creates the relationships $links, each a map {source,
// target, type, position, strength, targetType, context}. The relationship's type is the link's
// type, given as a parameter through a dynamic type (Neo4j 5.26 or later).
// Parallel links are kept, as the store keeps them.
const CreateLinks = `UNWIND $links AS l
MATCH (s:Item {id: l.source})
MERGE (t:Item {id: l.target})
ON CREATE SET t.present = false
CREATE (s)-[r:$(l.type)]->(t)
SET r.position = l.position, r.strength = l.strength,
    r.targetType = l.targetType, r.context = l.context`

// MarkDeleted keeps the nodes of the deleted items $ids as link targets.
const MarkDeleted = `UNWIND $ids AS id
MATCH (n:Item {id: id})
SET n.present = false`

// DropOrphans deletes the nodes of $ids that the store does not hold and
// that nothing links to any more.
const DropOrphans = `UNWIND $ids AS id
MATCH (n:Item {id: id})
WHERE NOT n.present AND NOT EXISTS { (n)--() }
DELETE n`

// ClearBatch deletes up to $batch nodes with their relationships and
// returns how many it deleted; a rebuild repeats it until none is left, so
// that no single transaction holds the whole graph.
const ClearBatch = `MATCH (n:Item)
WITH n LIMIT $batch
DETACH DELETE n
RETURN count(*) AS deleted`

// CountPresent counts the nodes of items the store holds.
const CountPresent = `MATCH (n:Item)
WHERE n.present
RETURN count(n) AS items`

// MaxHops is the largest depth Hops accepts.
const MaxHops = 64

// Hops returns the hop query for a depth bound and a direction. It takes
// $anchors (item ids), $types (relationship types to follow, or null for
// all), $targets (the only nodes to return, or null for all) and $limit,
// and returns one row (id, distance) per reached node, nearest first, then
// by id. A path walks only through nodes the store holds; anchors come
// back at distance 0. The pattern is the plain bounded
// variable-length one with min(length(p)) so that Neo4j can plan it as a
// breadth-first, pruning expansion rather than enumerating every path.
func Hops(maxHops int, directed bool) string {
	if maxHops < 0 || maxHops > MaxHops {
		panic(fmt.Sprintf("cypher.Hops: depth %d is outside [0, %d]", maxHops, MaxHops))
	}
	arrow := ""
	if directed {
		arrow = ">"
	}
	return fmt.Sprintf(`UNWIND $anchors AS anchor
MATCH (a:Item {id: anchor})
WHERE a.present
MATCH p = (a)-[*0..%d]-%s(n:Item)
WHERE ($targets IS NULL OR n.id IN $targets)
  AND all(x IN nodes(p) WHERE x.present)
  AND ($types IS NULL OR all(r IN relationships(p) WHERE type(r) IN $types))
RETURN n.id AS id, min(length(p)) AS distance
ORDER BY distance, id
LIMIT $limit`, maxHops, arrow)
}

// ParseHops reports whether q is a hop query Hops returns, and with which
// depth bound and direction.
func ParseHops(q string) (maxHops int, directed bool, ok bool) {
	for k := 0; k <= MaxHops; k++ {
		for _, d := range []bool{false, true} {
			if q == Hops(k, d) {
				return k, d, true
			}
		}
	}
	return 0, false, false
}
