// Package datasets finds the shared BEIR datasets for tests and
// benchmarks: $H4R_DATASETS, or ../shared/datasets beside the module's
// root. One finder, located from go.mod, instead of a relative path per
// package (one such copy counted its ".." wrong and only worked in a
// helper's worktree).
package datasets
