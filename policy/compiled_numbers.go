package policy

import (
	"cmp"
	"math"
	"strconv"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/util"
)

// compareTerms is a.Value.Compare(b.Value), the order of OPA's comparison
// built-ins, with compareNumbers for two numbers.
func compareTerms(a, b *ast.Term) int {
	if x, ok := a.Value.(ast.Number); ok {
		if y, ok := b.Value.(ast.Number); ok {
			return compareNumbers(x, y)
		}
	}
	return a.Value.Compare(b.Value)
}

// termsEqual is a.Equal(b) (OPA's unification of ground terms and its ==),
// with compareNumbers for two numbers.
func termsEqual(a, b *ast.Term) bool {
	if x, ok := a.Value.(ast.Number); ok {
		if y, ok := b.Value.(ast.Number); ok {
			return compareNumbers(x, y) == 0
		}
	}
	return a.Equal(b)
}

// compareNumbers is ast.NumberCompare without its allocations in the common
// cases: two integers (as NumberCompare does first), two plain decimals of
// at most 15 significant digits (each reads as a distinct float64, in
// order: 15 digits is what a float64 always keeps), or two numbers written
// the way Go writes float64s (strconv 'g', -1: the shortest decimal that
// reads back as the float, as OPA writes the item's scores) that read back
// as different floats. Rounding to the nearest float is monotonic, so two
// decimals whose floats differ are ordered as their floats are; and two
// shortest forms of different floats are at least 1e-17 apart relatively,
// more than the 64-bit precision NumberCompare's slowest path keeps.
// Everything else (equal floats, other spellings, huge numbers) is
// NumberCompare's. FuzzCompareNumbers holds the two together.
func compareNumbers(x, y ast.Number) int {
	if x == y {
		return 0
	}
	if xi, ok := util.Atoi64(string(x)); ok {
		if yi, ok := util.Atoi64(string(y)); ok {
			return cmp.Compare(xi, yi)
		}
	}
	if xf, ok := shortDecimal(string(x)); ok {
		if yf, ok := shortDecimal(string(y)); ok {
			return cmp.Compare(xf, yf)
		}
	}
	if xf, ok := shortestFloat(string(x)); ok {
		if yf, ok := shortestFloat(string(y)); ok && xf != yf {
			return cmp.Compare(xf, yf)
		}
	}
	return ast.NumberCompare(x, y)
}

// shortestFloat parses s if it is exactly how strconv writes a finite
// float64 with 'g' and the shortest precision.
func shortestFloat(s string) (float64, bool) {
	if len(s) > 32 {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	var buf [32]byte
	return f, string(strconv.AppendFloat(buf[:0], f, 'g', -1, 64)) == s
}

// shortDecimal parses s if it is a plain decimal ([-]digits[.digits], no
// exponent) of at most 15 significant digits: any two such decimals read
// as float64s compare as the decimals do, equal ones included.
func shortDecimal(s string) (float64, bool) {
	if len(s) == 0 || len(s) > 40 {
		return 0, false
	}
	i := 0
	if s[0] == '-' {
		i = 1
	}
	digits, significant, dot := 0, 0, false
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case c == '.' && !dot && digits > 0:
			dot = true
		case c >= '0' && c <= '9':
			digits++
			if c != '0' || significant > 0 {
				significant++
			}
		default:
			return 0, false
		}
	}
	if digits == 0 || significant > 15 || s[len(s)-1] == '.' {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}
