package vecindex

import "golang.org/x/sys/cpu"

// hasVectorUnit says whether dotIntsWide runs on this machine: AVX2, read
// once at start and never changed.
var hasVectorUnit = cpu.X86.HasAVX2

// dotIntsWide sets sums[i] to the dot product of q[:wide] with the first
// wide codes of the i-th vector of codes (vectors len(q) apart); wide is a
// positive multiple of 16. In kernel_amd64.s.
//
//go:noescape
func dotIntsWide(sums []int32, q []int16, codes []int8, wide int)

// dotFloatsWide returns the dot product of a[:wide] and b[:wide]; wide is
// a positive multiple of 16. In kernel_amd64.s.
//
//go:noescape
func dotFloatsWide(a, b []float32, wide int) float32
