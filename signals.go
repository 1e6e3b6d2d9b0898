package h4r

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Signal names one of the eight ranking signals. Its value indexes Signals
// and Weights.
type Signal int

// The eight signals, in the order docs/concepts.md lists them. Novelty and
// Sensitivity hold the inverted values (1 − metadata value), so that for
// every signal higher means "rank higher".
const (
	Relevance Signal = iota
	Recency
	Frequency
	Importance
	Causality
	Novelty
	Trust
	Sensitivity
	NumSignals = 8
)

// String returns the signal's JSON key ("relevance", "recency", …).
func (s Signal) String() string {
	switch s {
	case Relevance:
		return "relevance"
	case Recency:
		return "recency"
	case Frequency:
		return "frequency"
	case Importance:
		return "importance"
	case Causality:
		return "causality"
	case Novelty:
		return "novelty"
	case Trust:
		return "trust"
	case Sensitivity:
		return "sensitivity"
	}
	return "signal(" + strconv.Itoa(int(s)) + ")"
}

// ParseSignal returns the signal whose JSON key is name.
func ParseSignal(name string) (Signal, bool) {
	for s := Signal(0); s < NumSignals; s++ {
		if s.String() == name {
			return s, true
		}
	}
	return 0, false
}

// Signals holds one item's eight signal values, each in [0, 1]. It marshals
// to a JSON object with the eight keys in the order of docs/concepts.md.
type Signals [NumSignals]float64

// Weights holds the eight ranking weights. The final score is Σ wᵢ·sᵢ.
type Weights [NumSignals]float64

// Score returns Σ wᵢ·sᵢ.
func (w Weights) Score(s Signals) float64 {
	var sum float64
	for i := range w {
		sum += w[i] * s[i]
	}
	return sum
}

// Sum returns Σ wᵢ.
func (w Weights) Sum() float64 {
	var sum float64
	for _, v := range w {
		sum += v
	}
	return sum
}

// Validate checks that every weight is finite and non-negative and that at
// least one is positive. field prefixes the offending key in the error
// ("weights" gives "weights.recency").
func (w Weights) Validate(field string) error {
	for i, v := range w {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return Errorf(EINVALID, field+"."+Signal(i).String(), "weight must be a finite number >= 0, got %v", v)
		}
	}
	if w.Sum() == 0 {
		return Errorf(EINVALID, field, "at least one weight must be positive")
	}
	return nil
}

// Normalized returns the weights scaled to sum to 1, and whether they had to
// be scaled (callers report that as a warning). It assumes Validate passed.
func (w Weights) Normalized() (Weights, bool) {
	sum := w.Sum()
	if math.Abs(sum-1) < 1e-9 {
		return w, false
	}
	var n Weights
	for i, v := range w {
		n[i] = v / sum
	}
	return n, true
}

// Override returns w with the values in byName replacing its own; keys are
// signal names. An unknown key is an invalid_argument error naming
// field.key.
func (w Weights) Override(field string, byName map[string]float64) (Weights, error) {
	for name, v := range byName {
		s, ok := ParseSignal(name)
		if !ok {
			return w, Errorf(EINVALID, field+"."+name, "unknown signal %q (want one of relevance, recency, frequency, importance, causality, novelty, trust, sensitivity)", name)
		}
		w[s] = v
	}
	return w, nil
}

func (s Signals) MarshalJSON() ([]byte, error) { return marshalVector(s) }
func (w Weights) MarshalJSON() ([]byte, error) { return marshalVector(w) }

func (s *Signals) UnmarshalJSON(b []byte) error { return unmarshalVector(b, (*[NumSignals]float64)(s)) }
func (w *Weights) UnmarshalJSON(b []byte) error { return unmarshalVector(b, (*[NumSignals]float64)(w)) }

// marshalVector writes the eight values as an object in signal order.
func marshalVector(v [NumSignals]float64) ([]byte, error) {
	return appendVector(make([]byte, 0, 16*NumSignals+16), v)
}

// appendVector appends the eight values as an object in signal order. A
// pack holds one per result: it appends rather than formats, as it runs
// for every result of every pack.
func appendVector(buf []byte, v [NumSignals]float64) ([]byte, error) {
	buf = append(buf, '{')
	for i, x := range v {
		if i > 0 {
			buf = append(buf, ',')
		}
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("signal %s is not finite: %v", Signal(i), x)
		}
		buf = append(buf, '"')
		buf = append(buf, Signal(i).String()...) // plain lower-case letters: nothing to escape
		buf = append(buf, '"', ':')
		buf = strconv.AppendFloat(buf, x, 'f', -1, 64)
	}
	buf = append(buf, '}')
	return buf, nil
}

// unmarshalVector reads {"relevance": 0.6, …}. Errors are *Error naming
// the key relative to the object ("recency"); jsonstrict.Decode prefixes
// the object's path ("weights.recency").
func unmarshalVector(b []byte, v *[NumSignals]float64) error {
	if scanVector(b, v) {
		return nil
	}
	return decodeVector(b, v)
}

// decodeVector is unmarshalVector's general reading, with its errors.
func decodeVector(b []byte, v *[NumSignals]float64) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return Errorf(EINVALID, "", `want an object of signal names to numbers, such as {"relevance": 0.6, "recency": 0.4}`)
	}
	for _, name := range slices.Sorted(maps.Keys(m)) { // the same error for the same input
		s, ok := ParseSignal(name)
		if !ok {
			for t := Signal(0); t < NumSignals; t++ {
				if strings.EqualFold(t.String(), name) {
					return Errorf(EINVALID, name, "unknown signal %q (did you mean %q?): signal names are case-sensitive", name, t.String())
				}
			}
			return Errorf(EINVALID, name, "unknown signal %q (want one of relevance, recency, frequency, importance, causality, novelty, trust, sensitivity)", name)
		}
		var x *float64
		if err := json.Unmarshal(m[name], &x); err != nil || x == nil {
			got := string(bytes.TrimSpace(m[name]))
			if len(got) > 40 {
				got = strings.ToValidUTF8(got[:40], "") + "…"
			}
			return Errorf(EINVALID, name, "want a number that fits a 64-bit float, got %s", got)
		}
		v[s] = *x
	}
	return nil
}

// scanVector reads the common form of a vector, an object whose keys are
// signal names without escapes and whose values are JSON numbers, into v
// and reports whether b had that form. It sets v only when it reports
// true, with what unmarshalVector's general reading sets (a repeated key's
// last value); anything else, errors included, is left to that reading.
// Every result of every pack a client decodes holds one.
func scanVector(b []byte, v *[NumSignals]float64) bool {
	out := *v
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		*v = out
		return skipSpace(b, i+1) == len(b)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return false
		}
		end := bytes.IndexByte(b[i+1:], '"')
		if end < 0 {
			return false
		}
		name := b[i+1 : i+1+end]
		if bytes.IndexByte(name, '\\') >= 0 {
			return false
		}
		s, ok := parseSignalBytes(name)
		if !ok {
			return false
		}
		i = skipSpace(b, i+end+2)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipSpace(b, i+1)
		n := numberEnd(b, i)
		if n == i {
			return false
		}
		x, err := strconv.ParseFloat(string(b[i:n]), 64)
		if err != nil {
			return false
		}
		out[s] = x
		i = skipSpace(b, n)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			if skipSpace(b, i+1) != len(b) {
				return false
			}
			*v = out
			return true
		default:
			return false
		}
	}
}

func parseSignalBytes(name []byte) (Signal, bool) {
	for s := Signal(0); s < NumSignals; s++ {
		if s.String() == string(name) {
			return s, true
		}
	}
	return 0, false
}

// skipSpace returns the index of the first byte of b at or after i that
// is not JSON white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// numberEnd returns the end of the JSON number that starts at b[i], or i
// when none does: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func numberEnd(b []byte, i int) int {
	start := i
	digits := func(j int) int {
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		return j
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(i + 1)
	default:
		return start
	}
	if i < len(b) && b[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return start
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		j := i + 1
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		k := digits(j)
		if k == j {
			return start
		}
		i = k
	}
	return i
}
