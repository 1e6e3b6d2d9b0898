// Package bridge is the cross-session context bridge: given a
// tool call (its name and parameters) and optionally its result, it finds
// similar past trajectories — items of kind "trajectory" — and returns
// them as context_bridge{matches, recommendation} beside the result.
//
// A call's signature is its fingerprint (SHA-256 of the lower-cased
// content), domain, key concepts, tool sequence and complexity. Similarity
// is the document's weighted concept score (Jaccard of concepts 0.5,
// domain 0.2, tool overlap 0.2, complexity 0.1), or, when an embedder is
// configured, 0.7 embedding cosine + 0.3 concept Jaccard. Candidates are
// read through a Source that must apply the policy slicer (EngineSource
// runs a pack with the caller's specialist), so a trajectory the caller
// may not see is never a match.
//
// The bridge is off unless enabled, answers only allow-listed tools, caches
// matches by fingerprint, caller and policy revision (LRU) for as long as
// the trajectories it read from have not changed (Changes: the index's
// generation), checks every answer's matches against their stored
// versions at delivery (WithVersions), lets calls that join a read in
// flight wait under their own deadline, and follows the document's
// degradation contract: a timeout gives status "degraded" with reason
// "timeout"; a failed embedding falls back to concept-only similarity and
// says so; a storage failure leaves context_bridge out and is logged at
// ERROR with error_count incremented.
package bridge
