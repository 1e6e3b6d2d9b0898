package pack

import (
	"flag"
	"testing"

	"github.com/h4r/h4r/internal/golden"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestGoldenPack builds the fixture pack and compares it with
// testdata/pack.golden.json. Run `go test ./pack -run Golden -update` after
// an intended change and review the diff.
func TestGoldenPack(t *testing.T) {
	p := NewBuilder(WithClock(fixedClock)).Build(fixtureInput(t))
	golden.JSON(t, "testdata/pack.golden.json", p, *update)
}
