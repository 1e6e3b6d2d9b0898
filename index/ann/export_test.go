package ann

// ParallelScanMin exposes the list length from which a scan is split
// among the CPUs, so that a test covers both sides of it.
const ParallelScanMin = parallelScanMin

// WithChunkShift sets the chunk size of the lists' codes to 1<<s vectors,
// so that tests cross chunk boundaries with few vectors.
func WithChunkShift(s int) Option { return func(x *Index) { x.shift = s } }
