package idtable

import (
	"hash/maphash"
	"unsafe"
)

// Ref is the number a table keeps for a key: the caller's index of it, or
// any encoding of where the key is.
type Ref interface{ ~uint32 | ~uint64 }

// Table maps keys to refs; keyOf, given at each call, returns the key of
// a ref the table holds, from the caller's own storage. Its zero value is
// an empty table. It is not safe for concurrent writes.
//
// Slots hold ref+1, so that 0 marks an empty slot; a ref must therefore
// be below the type's largest value. Probing is linear and deletion shifts
// the entries after a removed one back (no tombstones), so a lookup stops
// at the first empty slot. The table doubles past three quarters full.
type Table[R Ref] struct {
	slots []R
	n     int
	seed  maphash.Seed
	init  bool // seed set
}

// minSlots is the size of a table's first array.
const minSlots = 16

// New returns a table sized for n keys without growing.
func New[R Ref](n int) *Table[R] {
	t := &Table[R]{}
	t.Grow(n, nil)
	return t
}

// Len is the number of keys held.
func (t *Table[R]) Len() int { return t.n }

// Bytes is the memory of the slot array.
func (t *Table[R]) Bytes() int {
	var r R
	return cap(t.slots) * int(unsafe.Sizeof(r))
}

func (t *Table[R]) home(key string) uint64 {
	return maphash.String(t.seed, key) & uint64(len(t.slots)-1)
}

// Get returns the ref of key.
func (t *Table[R]) Get(key string, keyOf func(R) string) (R, bool) {
	if t.n == 0 {
		return 0, false
	}
	mask := uint64(len(t.slots) - 1)
	for i := t.home(key); ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == 0 {
			return 0, false
		}
		if keyOf(s-1) == key {
			return s - 1, true
		}
	}
}

// GetBytes is Get for a key in bytes, which it does not keep: it reads
// them in place rather than copying them into a string, as a map lookup
// by string(b) does.
func (t *Table[R]) GetBytes(key []byte, keyOf func(R) string) (R, bool) {
	return t.Get(unsafe.String(unsafe.SliceData(key), len(key)), keyOf)
}

// Put sets the ref of key, adding key when it is absent.
func (t *Table[R]) Put(key string, ref R, keyOf func(R) string) {
	if t.n > 0 {
		mask := uint64(len(t.slots) - 1)
		for i := t.home(key); ; i = (i + 1) & mask {
			s := t.slots[i]
			if s == 0 {
				break
			}
			if keyOf(s-1) == key {
				t.slots[i] = ref + 1
				return
			}
		}
	}
	t.Add(key, ref, keyOf)
}

// Add adds key, which the table must not hold, with ref: it compares no
// keys, so a caller that knows key is new (a rebuild, a load of unique
// ids) skips the comparisons of Put. keyOf is used only if the table
// grows, and must then answer for every ref held.
func (t *Table[R]) Add(key string, ref R, keyOf func(R) string) {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.Grow(t.n+1, keyOf)
	}
	mask := uint64(len(t.slots) - 1)
	i := t.home(key)
	for t.slots[i] != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = ref + 1
	t.n++
}

// Delete removes key and reports whether the table held it.
func (t *Table[R]) Delete(key string, keyOf func(R) string) bool {
	if t.n == 0 {
		return false
	}
	mask := uint64(len(t.slots) - 1)
	i := t.home(key)
	for {
		s := t.slots[i]
		if s == 0 {
			return false
		}
		if keyOf(s-1) == key {
			break
		}
		i = (i + 1) & mask
	}
	// Shift back each later entry of the run that may move into the hole:
	// one whose home is not cyclically within (hole, its slot].
	for j := i; ; {
		j = (j + 1) & mask
		s := t.slots[j]
		if s == 0 {
			break
		}
		h := t.home(keyOf(s - 1))
		if (j-h)&mask >= (j-i)&mask {
			t.slots[i], i = s, j
		}
	}
	t.slots[i] = 0
	t.n--
	return true
}

// Grow makes room for n keys without growing again, rehashing the keys
// held through keyOf (which may be nil while the table is empty).
func (t *Table[R]) Grow(n int, keyOf func(R) string) {
	if !t.init {
		t.seed, t.init = maphash.MakeSeed(), true
	}
	size := minSlots
	for size*3 < n*4 {
		size *= 2
	}
	if size <= len(t.slots) {
		return
	}
	old := t.slots
	t.slots = make([]R, size)
	mask := uint64(size - 1)
	for _, s := range old {
		if s == 0 {
			continue
		}
		i := t.home(keyOf(s - 1))
		for t.slots[i] != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = s
	}
}
