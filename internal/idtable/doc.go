// Package idtable finds a number by the string it stands for, where the
// caller already keeps the strings: an index that numbers its ids (a graph
// node, a vector's place in a list) holds each id once, by number, and
// needs only the way back from id to number.
//
// A Go map from string to number holds a second copy of every string
// header beside the number and grows by doubling: at a million ids
// map[string]uint32 took about 52 MB, where this table's array of
// numbers, probed linearly and compared through the caller's strings,
// takes 8 MB (bench/results/2026-11-30/memory-ids.md). The price is a
// string comparison through the caller's array on each probe, which a
// map makes against its own copy.
package idtable
