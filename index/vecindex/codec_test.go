package vecindex

import (
	"math"
	"slices"
	"testing"
)

// TestFloat32Codec: what EncodeFloat32 writes DecodeFloat32 reads back
// bit for bit, and a blob that is not whole float32s is refused.
func TestFloat32Codec(t *testing.T) {
	tests := []struct {
		name string
		v    []float32
	}{
		{"one", []float32{1}},
		{"signs and subnormals", []float32{-0.5, 0, float32(math.Copysign(0, -1)), math.SmallestNonzeroFloat32, math.MaxFloat32}},
		{"a 512-dimension vector", func() []float32 {
			v := make([]float32, 512)
			for i := range v {
				v[i] = float32(i)/511 - 0.5
			}
			return v
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := EncodeFloat32(tt.v)
			if len(b) != 4*len(tt.v) {
				t.Fatalf("%d bytes for %d components", len(b), len(tt.v))
			}
			got, err := DecodeFloat32(nil, b)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(got, tt.v, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
				t.Errorf("decoded %v, want %v", got, tt.v)
			}
		})
	}
	for _, bad := range [][]byte{nil, {1, 2, 3}, {1, 2, 3, 4, 5}} {
		if _, err := DecodeFloat32(nil, bad); err == nil {
			t.Errorf("DecodeFloat32(%v): no error", bad)
		}
	}
}
