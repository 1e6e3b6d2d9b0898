//go:build !amd64

package vecindex

// hasVectorUnit is false where no assembly kernel exists: the plain loops
// (and the sparse scan) score every vector.
const hasVectorUnit = false

func dotIntsWide(sums []int32, q []int16, codes []int8, wide int) {
	panic("vecindex: no vector unit on this architecture")
}

func dotFloatsWide(a, b []float32, wide int) float32 {
	panic("vecindex: no vector unit on this architecture")
}
