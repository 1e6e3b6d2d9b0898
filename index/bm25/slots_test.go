package bm25

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSlotList: a packed list reads back every slot it was given and
// searches as a plain sorted slice does, for spans that need every width
// from 7 bits (a dense block) to 32 (a block spanning every slot).
func TestSlotList(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for _, tc := range []struct {
		name   string
		n      int
		maxGap uint32
		start  uint32
	}{
		{"one partial block", 5, 3, 0},
		{"exactly one block", blockSize, 1, 0},
		{"dense, many blocks", 10 * blockSize, 1, 0},
		{"common term", 7*blockSize + 3, 20, 100},
		{"rare term", 3*blockSize + 1, 1 << 16, 9},
		{"widest gaps", 2*blockSize + 5, 1 << 23, 0},
		{"near the last slot", 2 * blockSize, 1 << 22, math.MaxUint32 - 2*blockSize<<22},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := make([]uint32, tc.n)
			s := tc.start
			for i := range want {
				want[i] = s
				s += 1 + rng.Uint32N(tc.maxGap)
			}
			var l slotList
			for _, s := range want {
				l.push(s)
			}
			if l.len() != len(want) {
				t.Fatalf("len %d, want %d", l.len(), len(want))
			}
			r := l.reader()
			for i, w := range want {
				if got := r.at(i); got != w {
					t.Fatalf("at(%d) = %d, want %d", i, got, w)
				}
			}
			for range 200 {
				from := rng.IntN(len(want))
				to := from + rng.IntN(min((from/blockSize+1)*blockSize, len(want))-from+1) // within from's block
				target := want[rng.IntN(len(want))] + rng.Uint32N(2)
				i, _ := slices.BinarySearch(want[from:to], target)
				if got := r.search(from, to, target); got != from+i {
					t.Fatalf("search(%d, %d, %d) = %d, want %d", from, to, target, got, from+i)
				}
			}
		})
	}
}

// TestSlotListWidths: the widest block (first slot 0, last the largest)
// packs at 32 bits and the densest at 7.
func TestSlotListWidths(t *testing.T) {
	var dense, wide slotList
	for i := range blockSize {
		dense.push(uint32(i))
	}
	for i := range blockSize - 1 {
		wide.push(uint32(i))
	}
	wide.push(math.MaxUint32)
	if dense.blocks[0].width != 7 || wide.blocks[0].width != 32 {
		t.Fatalf("widths %d and %d, want 7 and 32", dense.blocks[0].width, wide.blocks[0].width)
	}
	r := wide.reader()
	if got := r.at(blockSize - 1); got != math.MaxUint32 {
		t.Fatalf("the widest block's last slot reads %d", got)
	}
	if got := r.at(blockSize - 2); got != blockSize-2 {
		t.Fatalf("the widest block's slot %d reads %d", blockSize-2, got)
	}
}
