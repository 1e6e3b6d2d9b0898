package ann

// ParallelScanMin exposes the list length from which a scan is split
// among the CPUs, so that a test covers both sides of it.
const ParallelScanMin = parallelScanMin
