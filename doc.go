// Package h4r holds the plain API types of the H4R context engine: the
// request a specialist sends, the context pack it gets back, the eight ranking
// signals, the specialist's identity and the one error type every part of the
// system returns. It has no dependencies beyond the standard library, so every
// other package can import it.
//
// The pipeline stages live in their own packages: sources (item model,
// candidate generators, stores), h4r/ (the ranker, package ranker), scs (the
// policy slicer), pack (the builder) and engine (which runs them in order).
// docs/concepts.md describes the contract these types implement.
package h4r
