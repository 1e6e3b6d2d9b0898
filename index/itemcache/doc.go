// Package itemcache holds decoded memory items by id, each with the stamp
// of the row it was decoded from, for the SQL stores' read paths: a
// search's hits are looked up by the stamp their rows carry now, and only
// the ones missing or changed are read and decoded again. The store's
// tables stay the truth; the stamp (version, access counts, size) is what
// tells whether a decoded copy is still the row's. A store must therefore
// raise an item's version on every change of its content or links, and
// never reuse an (id, version) pair, not even after a delete.
//
// A cache that cannot hold its store keeps only the items reads come back
// to (Selection, shared with the embedded store's own cache).
package itemcache
