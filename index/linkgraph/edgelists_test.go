package linkgraph

import (
	"fmt"
	"slices"
	"testing"
)

// FuzzEdgeLists: any sequence of adds, clears and filters leaves every
// node's edges as a slice per node would, however runs move, are freed and
// taken again, and the array compacts. Each op is two bytes: a node (of eight) and what to do with it.
func FuzzEdgeLists(f *testing.F) {
	f.Add([]byte{0, 1, 1, 2, 0, 0, 2, 3, 1, 0})
	f.Add([]byte{3, 5, 3, 0, 4, 7, 3, 9, 4, 0x80})
	f.Fuzz(func(t *testing.T, ops []byte) {
		const nodes = 8
		var l edgeLists[uint32]
		want := make([][]uint32, nodes)
		for range nodes {
			l.addNode()
		}
		for i := 0; i+1 < len(ops); i += 2 {
			n, op := uint32(ops[i]%nodes), ops[i+1]
			switch {
			case op == 0: // clear
				l.set(n, nil)
				want[n] = nil
			case op >= 0x80: // keep the odd edges only, in place as Replace does
				kept := slices.DeleteFunc(l.of(n), func(e uint32) bool { return e%2 == 0 })
				l.set(n, kept)
				want[n] = slices.DeleteFunc(want[n], func(e uint32) bool { return e%2 == 0 })
			default:
				l.add(n, uint32(op))
				want[n] = append(want[n], uint32(op))
			}
			for m := range uint32(nodes) {
				if got := l.of(m); !slices.Equal(got, want[m]) {
					t.Fatalf("after op %d: node %d holds %v, want %v", i/2, m, got, want[m])
				}
			}
		}
		if err := l.check(); err != nil {
			t.Fatal(err)
		}
	})
}

// check reports what is wrong with l's bookkeeping: a run lost or shared,
// runs overlapping or past the array, the count of live edges off, or more
// room than compaction allows.
func (l *edgeLists[E]) check() error {
	used, live := 0, 0
	owner := make([]int, len(l.edges)) // 1 + the run holding each slot
	for n, k := range l.at {
		if k == 0 {
			continue
		}
		used++
		r := l.runs[k-1]
		if r.n == 0 || r.n > r.size || int(r.start+r.size) > len(l.edges) {
			return fmt.Errorf("node %d: run %+v in an array of %d", n, r, len(l.edges))
		}
		for i := r.start; i < r.start+r.size; i++ {
			if owner[i] != 0 {
				return fmt.Errorf("node %d: slot %d is also run %d's", n, i, owner[i]-1)
			}
			owner[i] = int(k)
		}
		live += int(r.n)
	}
	switch room := len(l.edges) - live; {
	case used+len(l.free) != len(l.runs):
		return fmt.Errorf("%d runs in use and %d free, of %d: a run was lost or shared", used, len(l.free), len(l.runs))
	case live != l.live:
		return fmt.Errorf("the runs hold %d edges, the count says %d", live, l.live)
	case room >= compactMin && room > live:
		return fmt.Errorf("%d edges of room for %d edges: not compacted", room, live)
	}
	return nil
}

// TestEdgeListsCompact drives lists past the compaction threshold: many
// nodes' lists grown in turn (each move leaves room behind), then most of
// them cleared, checking the bookkeeping and every list after each step.
func TestEdgeListsCompact(t *testing.T) {
	const nodes = 300
	var l edgeLists[uint32]
	want := make([][]uint32, nodes)
	for range nodes {
		l.addNode()
	}
	verify := func(step string) {
		t.Helper()
		if err := l.check(); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		for n := range uint32(nodes) {
			if got := l.of(n); !slices.Equal(got, want[n]) {
				t.Fatalf("%s: node %d holds %v, want %v", step, n, got, want[n])
			}
		}
	}
	for round := range 20 {
		for n := range uint32(nodes) {
			e := uint32(round*nodes) + n
			l.add(n, e)
			want[n] = append(want[n], e)
		}
		verify(fmt.Sprintf("round %d", round))
	}
	compacted := len(l.edges)
	for n := range uint32(nodes) {
		if n%10 != 0 {
			l.set(n, nil)
			want[n] = nil
		}
	}
	verify("after clearing nine lists in ten")
	if len(l.edges) >= compacted {
		t.Fatalf("the array kept %d slots for %d edges after the clears (%d before)", len(l.edges), l.live, compacted)
	}
}
