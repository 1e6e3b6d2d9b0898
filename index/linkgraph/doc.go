// Package linkgraph is a link graph held in memory for causal hops: every
// item and link target gets a compact node number, each node lists the
// links it holds and those it receives, and a hop query is a
// breadth-first walk that visits each node once. The store that holds it
// stays the truth and decides when it is current (store/sqlite by a
// generation counter in the file, store/postgres by a generation and a
// log of changes shared by replicas); both prove their walks equal to the
// recursive queries hops used to be answered with.
package linkgraph
