// Package vecindex keeps item vectors in memory in compact form for the
// stores' exact vector search: each vector as int8 codes with one float32
// scale (a quarter of float32's memory), scanned in full for every query.
// The query is rounded to int16 codes too, so the scan is integer
// arithmetic: exact, and sixteen components an instruction where the CPU
// has AVX2 (kernel_amd64.s).
// The scan's scores are approximate; a store rescores the best candidates
// with the exact float32 vectors it keeps on disk (Rescore), so the order
// it returns is that of exact cosine among those candidates.
package vecindex
