package sqlkit

// MaintainedColumn returns the column of a store-maintained numeric metadata key
// (version, accessCount, byteSize, tokens), or "" for any other key.
func MaintainedColumn(key string) string {
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
