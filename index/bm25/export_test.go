package bm25

// IsTermRune is isTermRune, for the fuzz test.
var IsTermRune = isTermRune
