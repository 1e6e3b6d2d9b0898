// Package bench measures ranking quality. For now it holds the metric code
// (nDCG, MRR, recall) shared by the ranking golden test; the benchmark
// harness (h4r bench: datasets, tuning, latency, reports) builds on it.
package bench
