// Package columns holds what the SQL stores (sources/sqlite and
// sources/postgres) agree on about their item columns, so that a filter on
// a store-maintained key reads the same column in both.
package columns

// Maintained returns the column of a store-maintained numeric metadata key
// (version, accessCount, byteSize, tokens), or "" for any other key.
func Maintained(key string) string {
	switch key {
	case "version":
		return "version"
	case "accessCount":
		return "access_count"
	case "byteSize":
		return "byte_size"
	case "tokens":
		return "tokens"
	}
	return ""
}
