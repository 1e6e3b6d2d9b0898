// Package ann is the stores' in-memory vector index above a size: the
// int8 codes of index/vecindex partitioned into about √n lists
// around k-means centroids (an inverted file), so that a search scans the
// lists nearest the query instead of every vector. Below a threshold it is
// one list and a search is the exact scan. The stores rescore the
// approximate candidates with the exact float32 vectors. Given the lock
// its owner guards it with, it re-clusters in the background on a copy
// while searches and writes go on (rebuild.go); see
// PERFORMANCE.md for the measurements behind the design and the defaults.
package ann
