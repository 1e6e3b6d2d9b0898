package vecindex

import (
	"os"
	"strings"
	"testing"
)

// The CI step that runs the scan without AVX2 (GODEBUG=cpu.avx2=off) must
// really take the plain loops: the setting reaches hasVectorUnit.
func TestVectorUnitFollowsGODEBUG(t *testing.T) {
	off := strings.Contains(os.Getenv("GODEBUG"), "cpu.avx2=off")
	if off && hasVectorUnit {
		t.Fatal("GODEBUG turns AVX2 off, yet the scan takes the vector unit")
	}
	t.Logf("vector unit: %v (GODEBUG=%q)", hasVectorUnit, os.Getenv("GODEBUG"))
}
