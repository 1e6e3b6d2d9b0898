// Package idtable finds a number by the string it stands for, where the
// caller already keeps the strings: an index that numbers its ids (a graph
// node, a vector's place in a list) holds each id once, by number, and
// needs only the way back from id to number.
//
// A Go map from string to number holds a second copy of every string
// header beside the number and grows by doubling: at a million ids the
// link graph's map[string]uint32 took about 57 MB and the vector index's
// map from id to place about 54 MB, where this table's arrays of numbers,
// probed linearly and compared through the caller's strings, take 8 and
// 16 MB (bench/results/2026-11-30/memory-ids.md). The price is a call
// through the caller's array on each probe, where a map compares against
// its own copy; lookups cost about the same (BenchmarkGet).
package idtable
