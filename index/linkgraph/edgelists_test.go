package linkgraph

import (
	"slices"
	"testing"
)

// FuzzEdgeLists: any sequence of adds, clears and filters leaves every
// node's edges as a slice per node would, however freed lists are taken
// again. Each op is two bytes: a node (of eight) and what to do with it.
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
		used := 0
		for _, k := range l.at {
			if k != 0 {
				used++
			}
		}
		if used+len(l.free) != len(l.lists) {
			t.Fatalf("%d lists in use and %d free, of %d: a list was lost or shared", used, len(l.free), len(l.lists))
		}
	})
}
