package bm25

import (
	"encoding/binary"
	"math/bits"
	"slices"
)

// slotList holds one term's document slots, ascending, in blocks of
// blockSize. A full block is stored as each slot's offset from the block's
// first, in the fewest bits that hold its span (frame of reference): at a
// million documents a block of a common term spans a few thousand slots,
// 11–14 bits a posting instead of 32. A search reads a block through a
// blockReader, which unpacks it whole. The last, partial block is kept
// plain until it fills, since its span is not known before.
//
// A block of width w takes 128·w bits, exactly 16·w bytes. An offset is
// read with one unaligned 8-byte load (w ≤ 32 bits from any bit of a byte
// fit in it), so packed ends with 8 bytes of padding that no block owns.
type slotList struct {
	packed []byte       // the full blocks' offsets, then the padding
	blocks []packedHead // per full block
	tail   []uint32     // the partial block's slots
}

// packedHead locates a full block's offsets.
type packedHead struct {
	first uint32 // the block's first slot
	at0   uint32 // where in packed its offsets start
	width uint32 // the bits of each offset
}

// padding is the bytes past the last block that an 8-byte load of its
// last offset may read.
const padding = 8

// len returns the number of slots.
func (l *slotList) len() int { return len(l.blocks)*blockSize + len(l.tail) }

// push appends slot, which must be above every slot held.
func (l *slotList) push(slot uint32) {
	l.tail = append(l.tail, slot)
	if len(l.tail) < blockSize {
		return
	}
	first := l.tail[0]
	w := uint(bits.Len32(l.tail[blockSize-1] - first))
	start := max(len(l.packed)-padding, 0)
	l.packed = append(l.packed[:start], make([]byte, 16*w+padding)...)
	for i, s := range l.tail {
		bit := uint(i) * w
		at := l.packed[start+int(bit>>3):]
		binary.LittleEndian.PutUint64(at, binary.LittleEndian.Uint64(at)|uint64(s-first)<<(bit&7))
	}
	l.blocks = append(l.blocks, packedHead{first: first, at0: uint32(start), width: uint32(w)})
	l.tail = l.tail[:0]
}

// reader returns a reader of the list, at no block yet.
func (l *slotList) reader() blockReader { return blockReader{list: l} }

// blockReader reads one block of a slotList at a time: it unpacks a block
// when a read first reaches it, so that the reads that follow, most of a
// walk's, are plain loads.
type blockReader struct {
	list *slotList
	base int      // the index of the unpacked block's first slot
	cur  []uint32 // its slots: buf's, or the plain tail; nil: none yet
	buf  [blockSize]uint32
}

// at returns slot i.
func (r *blockReader) at(i int) uint32 {
	if uint(i-r.base) >= uint(len(r.cur)) {
		r.load(i)
	}
	return r.cur[i-r.base]
}

// load unpacks the block of slot i. It is kept out of at, which is then small enough
// to be inlined into the search's loops.
//
//go:noinline
func (r *blockReader) load(i int) {
	bl := i / blockSize
	r.base = bl * blockSize
	if bl == len(r.list.blocks) {
		r.cur = r.list.tail
		return
	}
	h := r.list.blocks[bl]
	packed, w, mask := r.list.packed[h.at0:h.at0+16*h.width+padding], uint(h.width), uint64(1)<<h.width-1
	for j := range r.buf {
		bit := uint(j) * w
		r.buf[j] = h.first + uint32(binary.LittleEndian.Uint64(packed[bit>>3:])>>(bit&7)&mask)
	}
	r.cur = r.buf[:]
}

// search returns the first index in [from, to), a range within one block,
// whose slot is at least target, or to when none is.
func (r *blockReader) search(from, to int, target uint32) int {
	if from >= to {
		return from
	}
	base := from / blockSize * blockSize
	r.at(from)
	i, _ := slices.BinarySearch(r.cur[from-base:to-base], target)
	return from + i
}
