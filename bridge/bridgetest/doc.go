// Package bridgetest makes the synthetic workload of the context bridge's
// benchmarks (BenchmarkEnrich10k, BenchmarkRank10k) and of its HTTP load
// test (h4r-loadtest --type bridge), so that they measure one workload:
// problems of a few technical words, so that a call shares concepts with
// many trajectories, in four domains. It does not import the bridge, so
// that the bridge's own internal tests can use it.
package bridgetest
