// Package vecindex keeps item vectors in memory in compact form for the
// stores' exact vector search: each vector as int8 codes with one float32
// scale (a quarter of float32's memory), scanned in full for every query.
// The scan's scores are approximate; a store rescores the best candidates
// with the exact float32 vectors it keeps on disk (Rescore), so the order
// it returns is that of exact cosine among those candidates.
package vecindex
