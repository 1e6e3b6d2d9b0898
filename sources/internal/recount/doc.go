// Package recount is what the SQL stores share to recount the tokens of
// stored items when the configured encoding changes: the batch size, and
// the count of an item as delivered, from its stored columns.
package recount
