package vecindex

import (
	"encoding/binary"
	"fmt"
	"math"
)

// EncodeFloat32 is the stored form of an exact vector, both stores': its
// components as little-endian float32, four bytes each.
func EncodeFloat32(v []float32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

// DecodeFloat32 reads a vector EncodeFloat32 wrote into dst's memory
// (dst may be nil). A blob that is empty or not a whole number of float32
// is an error.
func DecodeFloat32(dst []float32, blob []byte) ([]float32, error) {
	if len(blob) == 0 || len(blob)%4 != 0 {
		return dst, fmt.Errorf("blob of %d bytes is not a list of float32", len(blob))
	}
	dst = dst[:0]
	for j := 0; j < len(blob); j += 4 {
		dst = append(dst, math.Float32frombits(binary.LittleEndian.Uint32(blob[j:])))
	}
	return dst, nil
}
