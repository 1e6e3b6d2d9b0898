package bolttest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Struct is a PackStream structure: a tag byte and its fields. Bolt
// messages are structures (RUN is tag 0x10), and so are graph values.
type Struct struct {
	Tag    byte
	Fields []any
}

// maxDepth bounds nesting while decoding, so that a hostile message of
// nested one-byte lists cannot exhaust the stack.
const maxDepth = 64

// ErrTruncated is returned when the input ends inside a value.
var ErrTruncated = errors.New("packstream: truncated value")

// Decode reads one PackStream value from b and returns it with the bytes
// that follow it. Values decode to nil, bool, int64, float64, string,
// []byte, []any, map[string]any and Struct. Sizes are checked against the
// input before anything is allocated: a length prefix can never make the
// decoder allocate more than the input could hold.
func Decode(b []byte) (any, []byte, error) {
	d := decoder{b: b}
	v, err := d.value(0)
	if err != nil {
		return nil, nil, err
	}
	return v, d.b, nil
}

type decoder struct{ b []byte }

func (d *decoder) take(n int) ([]byte, error) {
	if n < 0 || n > len(d.b) {
		return nil, ErrTruncated
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out, nil
}

// size reads a big-endian unsigned length of width bytes.
func (d *decoder) size(width int) (int, error) {
	p, err := d.take(width)
	if err != nil {
		return 0, err
	}
	switch width {
	case 1:
		return int(p[0]), nil
	case 2:
		return int(binary.BigEndian.Uint16(p)), nil
	default:
		n := binary.BigEndian.Uint32(p)
		if uint64(n) > uint64(math.MaxInt32) {
			return 0, fmt.Errorf("packstream: size %d is too large", n)
		}
		return int(n), nil
	}
}

func (d *decoder) value(depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("packstream: values nested deeper than %d", maxDepth)
	}
	p, err := d.take(1)
	if err != nil {
		return nil, err
	}
	m := p[0]
	switch {
	case m <= 0x7f: // tiny positive int
		return int64(m), nil
	case m >= 0xf0: // tiny negative int
		return int64(int8(m)), nil
	case m >= 0x80 && m <= 0x8f:
		return d.str(int(m & 0x0f))
	case m >= 0x90 && m <= 0x9f:
		return d.list(int(m&0x0f), depth)
	case m >= 0xa0 && m <= 0xaf:
		return d.dict(int(m&0x0f), depth)
	case m >= 0xb0 && m <= 0xbf:
		return d.structure(int(m&0x0f), depth)
	}
	switch m {
	case 0xc0:
		return nil, nil
	case 0xc1:
		p, err := d.take(8)
		if err != nil {
			return nil, err
		}
		return math.Float64frombits(binary.BigEndian.Uint64(p)), nil
	case 0xc2:
		return false, nil
	case 0xc3:
		return true, nil
	case 0xc8:
		p, err := d.take(1)
		if err != nil {
			return nil, err
		}
		return int64(int8(p[0])), nil
	case 0xc9:
		p, err := d.take(2)
		if err != nil {
			return nil, err
		}
		return int64(int16(binary.BigEndian.Uint16(p))), nil
	case 0xca:
		p, err := d.take(4)
		if err != nil {
			return nil, err
		}
		return int64(int32(binary.BigEndian.Uint32(p))), nil
	case 0xcb:
		p, err := d.take(8)
		if err != nil {
			return nil, err
		}
		return int64(binary.BigEndian.Uint64(p)), nil
	case 0xcc, 0xcd, 0xce:
		n, err := d.size(1 << (m - 0xcc))
		if err != nil {
			return nil, err
		}
		p, err := d.take(n)
		if err != nil {
			return nil, err
		}
		return append([]byte{}, p...), nil
	case 0xd0, 0xd1, 0xd2:
		n, err := d.size(1 << (m - 0xd0))
		if err != nil {
			return nil, err
		}
		return d.str(n)
	case 0xd4, 0xd5, 0xd6:
		n, err := d.size(1 << (m - 0xd4))
		if err != nil {
			return nil, err
		}
		return d.list(n, depth)
	case 0xd8, 0xd9, 0xda:
		n, err := d.size(1 << (m - 0xd8))
		if err != nil {
			return nil, err
		}
		return d.dict(n, depth)
	}
	return nil, fmt.Errorf("packstream: unknown marker 0x%02x", m)
}

func (d *decoder) str(n int) (string, error) {
	p, err := d.take(n)
	if err != nil {
		return "", err
	}
	return string(p), nil
}

func (d *decoder) list(n, depth int) ([]any, error) {
	if n > len(d.b) { // every element takes at least one byte
		return nil, ErrTruncated
	}
	out := make([]any, n)
	for i := range out {
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func (d *decoder) dict(n, depth int) (map[string]any, error) {
	if n > len(d.b)/2 { // a key and a value take at least a byte each
		return nil, ErrTruncated
	}
	out := make(map[string]any, n)
	for range n {
		k, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		key, ok := k.(string)
		if !ok {
			return nil, fmt.Errorf("packstream: map key is %T, not a string", k)
		}
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		out[key] = v
	}
	return out, nil
}

func (d *decoder) structure(n, depth int) (Struct, error) {
	p, err := d.take(1)
	if err != nil {
		return Struct{}, err
	}
	fields, err := d.list(n, depth)
	if err != nil {
		return Struct{}, err
	}
	return Struct{Tag: p[0], Fields: fields}, nil
}

// Encode appends the PackStream form of v to b. It knows the values the
// fake server sends: nil, bool, the integer kinds, float64, string,
// []byte, []any, []string, map[string]any, map[string]string and Struct.
func Encode(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, 0xc0), nil
	case bool:
		if x {
			return append(b, 0xc3), nil
		}
		return append(b, 0xc2), nil
	case int:
		return encodeInt(b, int64(x)), nil
	case int64:
		return encodeInt(b, x), nil
	case float64:
		return binary.BigEndian.AppendUint64(append(b, 0xc1), math.Float64bits(x)), nil
	case string:
		b = header(b, len(x), 0x80, 0xd0)
		return append(b, x...), nil
	case []byte:
		switch n := len(x); {
		case n <= math.MaxUint8:
			b = append(b, 0xcc, byte(n))
		case n <= math.MaxUint16:
			b = binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(n))
		default:
			b = binary.BigEndian.AppendUint32(append(b, 0xce), uint32(n))
		}
		return append(b, x...), nil
	case []string:
		b = header(b, len(x), 0x90, 0xd4)
		for _, s := range x {
			b, _ = Encode(b, s)
		}
		return b, nil
	case []any:
		b = header(b, len(x), 0x90, 0xd4)
		for _, e := range x {
			var err error
			if b, err = Encode(b, e); err != nil {
				return nil, err
			}
		}
		return b, nil
	case map[string]string:
		b = header(b, len(x), 0xa0, 0xd8)
		for k, s := range x {
			b, _ = Encode(b, k)
			b, _ = Encode(b, s)
		}
		return b, nil
	case map[string]any:
		b = header(b, len(x), 0xa0, 0xd8)
		for k, e := range x {
			b, _ = Encode(b, k)
			var err error
			if b, err = Encode(b, e); err != nil {
				return nil, err
			}
		}
		return b, nil
	case Struct:
		if len(x.Fields) > 15 {
			return nil, fmt.Errorf("packstream: a structure has at most 15 fields, got %d", len(x.Fields))
		}
		b = append(b, 0xb0|byte(len(x.Fields)), x.Tag)
		for _, e := range x.Fields {
			var err error
			if b, err = Encode(b, e); err != nil {
				return nil, err
			}
		}
		return b, nil
	}
	return nil, fmt.Errorf("packstream: cannot encode %T", v)
}

// header appends the marker and size of a string, list or map: tiny is
// the marker of sizes under 16, wide the marker of an 8-bit size (the
// 16- and 32-bit markers follow it).
func header(b []byte, n int, tiny, wide byte) []byte {
	switch {
	case n < 16:
		return append(b, tiny|byte(n))
	case n <= math.MaxUint8:
		return append(b, wide, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, wide+1), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, wide+2), uint32(n))
}

func encodeInt(b []byte, n int64) []byte {
	switch {
	case n >= -16 && n <= 127:
		return append(b, byte(int8(n)))
	case n >= math.MinInt8 && n <= math.MaxInt8:
		return append(b, 0xc8, byte(int8(n)))
	case n >= math.MinInt16 && n <= math.MaxInt16:
		return binary.BigEndian.AppendUint16(append(b, 0xc9), uint16(int16(n)))
	case n >= math.MinInt32 && n <= math.MaxInt32:
		return binary.BigEndian.AppendUint32(append(b, 0xca), uint32(int32(n)))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xcb), uint64(n))
}
