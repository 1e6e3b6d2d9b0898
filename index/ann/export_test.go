package ann

import "fmt"

// ParallelScanMin exposes the list length from which a scan is split
// among the CPUs, so that a test covers both sides of it.
const ParallelScanMin = parallelScanMin

// WithChunkShift sets the chunk size of the lists' codes to 1<<s vectors,
// so that tests cross chunk boundaries with few vectors.
func WithChunkShift(s int) Option { return func(x *Index) { x.shift = s } }

// Check verifies the index's bookkeeping: every listed vector's position
// is the one recorded for its id, no id is recorded that is not listed,
// and the count is the number listed.
func (x *Index) Check() error {
	listed := 0
	for li := range x.lists {
		l := &x.lists[li]
		if len(l.scales) != len(l.ids) {
			return fmt.Errorf("list %d: %d ids, %d scales", li, len(l.ids), len(l.scales))
		}
		for i, id := range l.ids {
			if p, ok := x.where(id); !ok || p != (loc{int32(li), int32(i)}) {
				return fmt.Errorf("id %q listed at %d/%d, recorded at %v (%v)", id, li, i, p, ok)
			}
			listed++
		}
	}
	if listed != x.pos.Len() || listed != x.n {
		return fmt.Errorf("%d listed, %d recorded, count %d", listed, x.pos.Len(), x.n)
	}
	return nil
}

// Codes returns id's stored codes and scale.
func (x *Index) Codes(id string) ([]int8, float32, bool) {
	p, ok := x.where(id)
	if !ok {
		return nil, 0, false
	}
	l := &x.lists[p.list]
	return x.code(l, int(p.i)), l.scales[p.i], true
}
