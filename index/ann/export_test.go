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
// the count is the number listed, no two vectors share an id's number,
// and the ids no list holds are those counted dead.
func (x *Index) Check() error {
	listed := 0
	held := make([]bool, x.ids.Len())
	for li := range x.lists {
		l := &x.lists[li]
		if len(l.scales) != len(l.names) {
			return fmt.Errorf("list %d: %d ids, %d scales", li, len(l.names), len(l.scales))
		}
		for i, num := range l.names {
			if int(num) >= len(held) || held[num] {
				return fmt.Errorf("list %d/%d: id number %d of %d, or held twice", li, i, num, len(held))
			}
			held[num] = true
			id := x.idAt(l, i)
			if p, ok := x.where(id); !ok || p != (loc{int32(li), int32(i)}) {
				return fmt.Errorf("id %q listed at %d/%d, recorded at %v (%v)", id, li, i, p, ok)
			}
			listed++
		}
	}
	if listed != x.pos.Len() || listed != x.n {
		return fmt.Errorf("%d listed, %d recorded, count %d", listed, x.pos.Len(), x.n)
	}
	if dead := x.ids.Len() - listed; dead != x.deadIDs {
		return fmt.Errorf("%d ids held by no list, %d counted dead", dead, x.deadIDs)
	}
	return nil
}

// IDsHeld is the number of ids the index keeps, dead ones included.
func (x *Index) IDsHeld() int { return x.ids.Len() }

// Codes returns id's stored codes and scale.
func (x *Index) Codes(id string) ([]int8, float32, bool) {
	p, ok := x.where(id)
	if !ok {
		return nil, 0, false
	}
	l := &x.lists[p.list]
	return x.code(l, int(p.i)), l.scales[p.i], true
}
