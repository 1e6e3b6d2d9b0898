package names

import (
	"unsafe"

	"github.com/h4r/h4r/internal/trim"
)

// List holds strings by number, in the order they were appended. Strings
// are never changed or removed, so a string At returns stays valid, and
// keeps the bytes it views alive, whatever is appended later. Its zero
// value is empty and ready. It does no locking: its owner guards it.
type List struct {
	bytes []byte
	end   []uint64 // string i is bytes[end[i-1]:end[i]] (from 0 for the first)
}

// Grow makes room for n more strings' ends.
func (l *List) Grow(n int) {
	if n > cap(l.end)-len(l.end) {
		end := make([]uint64, len(l.end), len(l.end)+n)
		copy(end, l.end)
		l.end = end
	}
}

// Append adds s and returns its number.
func (l *List) Append(s string) uint32 {
	l.bytes = append(l.bytes, s...)
	return l.seal()
}

// AppendBytes adds a copy of b and returns its number.
func (l *List) AppendBytes(b []byte) uint32 {
	l.bytes = append(l.bytes, b...)
	return l.seal()
}

func (l *List) seal() uint32 {
	l.end = append(l.end, uint64(len(l.bytes)))
	return uint32(len(l.end) - 1)
}

// At returns string i, a view of the list's bytes (no copy).
func (l *List) At(i uint32) string {
	start := uint64(0)
	if i > 0 {
		start = l.end[i-1]
	}
	b := l.bytes[start:l.end[i]]
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// Trim drops the arrays' spare room when it is more than a sixteenth of
// what they hold, by copying them: a list filled by appends keeps up to a
// quarter more than it holds. Call it once a load is done; it briefly
// holds the bytes twice. Strings At returned before stay valid: they keep
// the old array alive.
func (l *List) Trim() {
	l.bytes = trim.Spare(l.bytes)
	l.end = trim.Spare(l.end)
}

// Len returns the number of strings.
func (l *List) Len() int { return len(l.end) }
