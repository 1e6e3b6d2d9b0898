// Package paged keeps values indexed by a uint32 key that runs nearly
// densely from zero, such as a table's row numbers, in pages of a fixed
// size instead of a map: a few bytes a key where a Go map spends tens,
// and no pointer per entry for the collector to follow where the values
// hold none. A page is made when one of its keys is first set, so a stray
// large key costs one page, not an array up to it.
package paged
