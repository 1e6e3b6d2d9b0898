// Package layering holds the module's layering rule and the test that
// enforces it: every package belongs to one layer (domain, library, index,
// embedding, store, pipeline, service, composition, command, from the
// bottom up), and a package imports only packages of its own layer or of a
// lower one. Nothing imports a command. The table of layers is in
// layering_test.go; README.md's package map describes the same layers.
//
// The rule lives in a package of its own, not in the root package's
// tests: the root package is the domain model, and its tests are about
// the domain; this test is about the whole module and runs go list over
// it, so it is kept where its name says what it checks and where it can
// be run alone (go test ./internal/layering). It has no code outside its
// test: nothing in the module needs to import it.
//
// Only the imports that ship are layered. Tests may reach up (a decision
// test runs against store/sqlite, a store's test measures with bench's
// datasets), and Go itself refuses an import cycle in them.
package layering
