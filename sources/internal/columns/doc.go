// Package columns holds what the SQL stores (sources/sqlite and
// sources/postgres) agree on about their item columns, so that a filter on
// a store-maintained key reads the same column in both.
package columns
