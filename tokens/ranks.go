package tokens

import (
	"encoding/binary"
	"math/bits"
)

// rankTable maps a token's bytes to its rank. The merge looks up a rank
// for every pair of parts it considers, and counting a piece starts with
// a lookup of the whole piece, so a lookup should touch one cache line:
// tokens of up to packedLen bytes (nearly all of cl100k's) are packed
// with their rank into 16-byte slots of an open-addressing table, probed
// linearly; longer ones stay in a map.
type rankTable struct {
	slots []rankSlot
	mask  uint64
	long  map[string]int32
}

// rankSlot holds a token's first 8 bytes in k0 and, in k1, its bytes 8 to
// 11 (bits 0–31), its length (bits 32–35; 0 marks an empty slot) and its
// rank (bits 36–63).
type rankSlot struct{ k0, k1 uint64 }

const (
	packedLen = 12
	keyBits   = 36
	keyMask   = 1<<keyBits - 1
)

func newRankTable(ranks map[string]int) *rankTable {
	size := 1 << bits.Len(uint(len(ranks))*5/2) // at most 40% full: few probes, most in the first line
	t := &rankTable{slots: make([]rankSlot, size), mask: uint64(size - 1), long: map[string]int32{}}
	for token, rank := range ranks {
		if len(token) == 0 || len(token) > packedLen {
			t.long[token] = int32(rank)
			continue
		}
		k0, k1 := pack(token)
		i := slotOf(k0, k1) & t.mask
		for t.slots[i].k1 != 0 {
			i = (i + 1) & t.mask
		}
		t.slots[i] = rankSlot{k0, k1 | uint64(rank)<<keyBits}
	}
	return t
}

// pack packs 1 to packedLen bytes and their length.
func pack(s string) (k0, k1 uint64) {
	n := len(s)
	if n >= 8 {
		k0 = binary.LittleEndian.Uint64([]byte(s[:8]))
		for i := 8; i < n; i++ {
			k1 |= uint64(s[i]) << (8 * (i - 8))
		}
	} else {
		for i := range n {
			k0 |= uint64(s[i]) << (8 * i)
		}
	}
	return k0, k1 | uint64(n)<<32
}

func slotOf(k0, k1 uint64) uint64 {
	h := (k0 ^ bits.RotateLeft64(k1, 29)) * 0x9e3779b97f4a7c15
	return h ^ h>>29
}

// rank returns the rank of the token s, if s is one.
func (t *rankTable) rank(s string) (int32, bool) {
	if len(s) > packedLen || len(s) == 0 {
		r, ok := t.long[s]
		return r, ok
	}
	k0, k1 := pack(s)
	for i := slotOf(k0, k1) & t.mask; ; i = (i + 1) & t.mask {
		sl := &t.slots[i]
		switch {
		case sl.k1 == 0:
			return 0, false
		case sl.k0 == k0 && sl.k1&keyMask == k1:
			return int32(sl.k1 >> keyBits), true
		}
	}
}
