package bm25

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
	x.names = trimmed(x.names)
	x.lists = trimmed(x.lists)
	for i := range x.lists {
		p := &x.lists[i]
		p.docs.packed = trimmed(p.docs.packed)
		p.docs.blocks = trimmed(p.docs.blocks)
		p.docs.tail = trimmed(p.docs.tail)
		p.tfs.small = trimmed(p.tfs.small)
		p.maxF = trimmed(p.maxF)
		p.last = trimmed(p.last)
	}
	x.ids = trimmed(x.ids)
	x.length = trimmed(x.length)
	x.live = trimmed(x.live)
	x.sums = trimmed(x.sums)
}

// trimmed returns s, or a copy of it without its spare room when that
// room is more than a sixteenth of its length.
func trimmed[S ~[]E, E any](s S) S {
	if 16*(cap(s)-len(s)) <= len(s) {
		return s
	}
	if len(s) == 0 {
		return nil
	}
	return append(make(S, 0, len(s)), s...)
}
