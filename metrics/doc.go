// Package metrics holds the Prometheus metrics of one H4R server in a
// registry of its own (never the global default), so that two servers in
// one process, as in tests, do not share counters.
//
// The names follow docs/concepts.md: h4r_retrieval_duration_seconds,
// h4r_candidates_total{source}, scs_slicing_duration_seconds,
// scs_opa_cache_hits_total, scs_opa_cache_misses_total,
// scs_budget_utilization_ratio{kind}, context_pack_assembly_duration_seconds,
// context_pack_affordances_generated_total{type}; this package adds
// h4r_generator_duration_seconds{source}, h4r_requests_rejected_total{reason},
// h4r_http_requests_total{route,code}, h4r_http_request_duration_seconds{route},
// h4r_item_cache_hits_total, h4r_item_cache_misses_total, h4r_item_cache_items,
// h4r_item_cache_bytes and the Go and process collectors
// (process_resident_memory_bytes).
//
// Stage durations come from the pack itself (explainability.timings and
// sources), so the histograms measure exactly what the pack reports.
package metrics
