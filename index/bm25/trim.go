package bm25

import "github.com/h4r/h4r/internal/trim"

// Trim gives back the room that building the index by appending left at
// the end of its arrays: append grows a large array by a quarter at a
// time, so a loaded index held up to a quarter of each array unused. A
// store calls it once after loading, since a loaded index is searched far
// more than it grows; later writes grow the arrays again as they need.
// It copies each array that has room to spare, so it briefly holds the
// largest array twice.
func (x *Index) Trim() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.names = trim.Spare(x.names)
	x.lists = trim.Spare(x.lists)
	for i := range x.lists {
		p := &x.lists[i]
		p.docs.packed = trim.Spare(p.docs.packed)
		p.docs.blocks = trim.Spare(p.docs.blocks)
		p.docs.tail = trim.Spare(p.docs.tail)
		p.tfs.small = trim.Spare(p.tfs.small)
		p.maxF = trim.Spare(p.maxF)
		p.last = trim.Spare(p.last)
	}
	x.ids = trim.Spare(x.ids)
	x.length = trim.Spare(x.length)
	x.live = trim.Spare(x.live)
	x.sums = trim.Spare(x.sums)
}
