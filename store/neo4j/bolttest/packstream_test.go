package bolttest

import (
	"bufio"
	"bytes"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestPackStreamRoundTrip(t *testing.T) {
	long := strings.Repeat("x", 300)
	for _, tc := range []struct {
		name string
		in   any
		want []byte // the encoding, when the spec fixes it
	}{
		{"null", nil, []byte{0xc0}},
		{"true", true, []byte{0xc3}},
		{"false", false, []byte{0xc2}},
		{"tiny int", int64(42), []byte{0x2a}},
		{"tiny negative int", int64(-16), []byte{0xf0}},
		{"int8", int64(-17), []byte{0xc8, 0xef}},
		{"int16", int64(1000), []byte{0xc9, 0x03, 0xe8}},
		{"int32", int64(-100000), []byte{0xca, 0xff, 0xfe, 0x79, 0x60}},
		{"int64", int64(math.MaxInt64), []byte{0xcb, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{"float", 1.5, []byte{0xc1, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0}},
		{"tiny string", "abc", []byte{0x83, 'a', 'b', 'c'}},
		{"empty string", "", []byte{0x80}},
		{"string8", strings.Repeat("y", 16), append([]byte{0xd0, 16}, strings.Repeat("y", 16)...)},
		{"string16", long, append([]byte{0xd1, 0x01, 0x2c}, long...)},
		{"bytes", []byte{1, 2}, []byte{0xcc, 2, 1, 2}},
		{"list", []any{int64(1), "a", nil}, []byte{0x93, 0x01, 0x81, 'a', 0xc0}},
		{"list8", make([]any, 20), append([]byte{0xd4, 20}, bytes.Repeat([]byte{0xc0}, 20)...)},
		{"map", map[string]any{"k": int64(1)}, []byte{0xa1, 0x81, 'k', 0x01}},
		{"struct", Struct{Tag: 0x70, Fields: []any{map[string]any{}}}, []byte{0xb1, 0x70, 0xa0}},
		{"nested", map[string]any{"rt": map[string]any{"servers": []any{map[string]any{"role": "READ"}}}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Encode(nil, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != nil && !bytes.Equal(b, tc.want) {
				t.Errorf("encoded % x, want % x", b, tc.want)
			}
			got, rest, err := Decode(append(b, 0xff))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(rest, []byte{0xff}) {
				t.Errorf("rest % x, want ff", rest)
			}
			if !reflect.DeepEqual(got, tc.in) {
				t.Errorf("decoded %#v, want %#v", got, tc.in)
			}
		})
	}
}

func TestPackStreamRejectsBadInput(t *testing.T) {
	deep := bytes.Repeat([]byte{0x91}, maxDepth+2)
	for _, tc := range []struct {
		name  string
		in    []byte
		trunc bool
	}{
		{"empty", nil, true},
		{"truncated int64", []byte{0xcb, 1, 2}, true},
		{"truncated string", []byte{0x85, 'a'}, true},
		{"string32 longer than the input", []byte{0xd2, 0x7f, 0xff, 0xff, 0xff, 'a'}, true},
		{"list32 longer than the input", []byte{0xd6, 0x7f, 0xff, 0xff, 0xff}, true},
		{"map16 longer than the input", []byte{0xd9, 0xff, 0xff, 0x80, 0x80}, true},
		{"struct without tag", []byte{0xb1}, true},
		{"map key not a string", []byte{0xa1, 0x01, 0x01}, false},
		{"unknown marker", []byte{0xc4}, false},
		{"nesting too deep", deep, false},
		{"size beyond int32", []byte{0xd2, 0xff, 0xff, 0xff, 0xff}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, _, err := Decode(tc.in)
			if err == nil {
				t.Fatalf("decoded %#v, want an error", v)
			}
			if got := errors.Is(err, ErrTruncated); got != tc.trunc {
				t.Errorf("error %v: truncated=%v, want %v", err, got, tc.trunc)
			}
		})
	}
	if _, err := Encode(nil, Struct{Fields: make([]any, 16)}); err == nil {
		t.Error("a structure of 16 fields encoded")
	}
	if _, err := Encode(nil, struct{}{}); err == nil {
		t.Error("a Go struct encoded")
	}
}

// FuzzDecode feeds the decoder what a client could send: it must never
// panic or allocate beyond the input, and what it decodes must encode and
// decode again to the same value.
func FuzzDecode(f *testing.F) {
	for _, seed := range [][]byte{
		{0xb3, 0x10, 0x85, 'R', 'E', 'T', 'U', 'R', 0xa0, 0xa0},
		{0xa1, 0x81, 'n', 0xff},
		{0xd6, 0x7f, 0xff, 0xff, 0xff},
		{0xc1, 0x7f, 0xf8, 0, 0, 0, 0, 0, 1},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		v, _, err := Decode(in)
		if err != nil {
			return
		}
		b, err := Encode(nil, v)
		if err != nil {
			t.Fatalf("decoded %#v but cannot encode it: %v", v, err)
		}
		again, rest, err := Decode(b)
		if err != nil || len(rest) != 0 {
			t.Fatalf("re-decoding %#v: %v, %d bytes left", v, err, len(rest))
		}
		if !equalValues(again, v) {
			t.Fatalf("round trip changed %#v into %#v", v, again)
		}
	})
}

// equalValues is reflect.DeepEqual with NaN equal to NaN.
func equalValues(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && (x == y || math.IsNaN(x) && math.IsNaN(y))
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalValues(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || !equalValues(v, w) {
				return false
			}
		}
		return true
	case Struct:
		y, ok := b.(Struct)
		return ok && x.Tag == y.Tag && equalValues(x.Fields, y.Fields)
	}
	return reflect.DeepEqual(a, b)
}

// FuzzReadMessage feeds the server's message reader what a client could
// send after the handshake: chunk sizes, chunks and PackStream. It must
// end with messages or an error, never panic, and a message it read must
// read back the same once framed again as the server frames its own.
func FuzzReadMessage(f *testing.F) {
	hello, _ := Encode(nil, Struct{Tag: msgHello, Fields: []any{map[string]any{"user_agent": "x"}}})
	f.Add(append(append([]byte{0, byte(len(hello))}, hello...), 0, 0))
	f.Add([]byte{0, 0, 0, 1, 0xc0, 0, 0})       // a no-op chunk, then a value that is no structure
	f.Add([]byte{0xff, 0xff, 1, 2, 3})          // a chunk longer than the input
	f.Add([]byte{0, 2, 0xb1, 0x10, 0, 1, 0x80}) // a message over two chunks, unterminated
	f.Fuzz(func(t *testing.T, in []byte) {
		cn := &conn{r: bufio.NewReader(bytes.NewReader(in))}
		for range 64 {
			msg, err := cn.readMessage()
			if err != nil {
				return
			}
			body, err := Encode(nil, msg)
			if err != nil {
				t.Fatalf("read %#v but cannot encode it: %v", msg, err)
			}
			again, err := (&conn{r: bufio.NewReader(bytes.NewReader(frame(body)))}).readMessage()
			if err != nil || !equalValues(again, msg) {
				t.Fatalf("framed again, %#v read back as %#v (%v)", msg, again, err)
			}
		}
	})
}

// A message over 64 KiB spans chunks; one over maxMessage is refused.
func TestLongMessages(t *testing.T) {
	for _, tc := range []struct {
		name string
		size int
		ok   bool
	}{{"two chunks", 100 << 10, true}, {"over the limit", maxMessage + 1, false}} {
		t.Run(tc.name, func(t *testing.T) {
			msg := Struct{Tag: msgRun, Fields: []any{strings.Repeat("q", tc.size), map[string]any{}, map[string]any{}}}
			body, err := Encode(nil, msg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := (&conn{r: bufio.NewReader(bytes.NewReader(frame(body)))}).readMessage()
			if tc.ok != (err == nil) || tc.ok && !reflect.DeepEqual(got, msg) {
				t.Errorf("read %d bytes: err %v, equal %v; want ok=%v", len(body), err, reflect.DeepEqual(got, msg), tc.ok)
			}
		})
	}
}
