// Package packrows holds what the SQL stores (sources/sqlite and
// sources/postgres) do alike with stored packs and their feedback, apart
// from the SQL: the values a row is written with, the error of a pack
// that is not there, and the visit of verdicts read whole. Each store
// keeps its own statements and its own encoding of a list and a time.
package packrows
