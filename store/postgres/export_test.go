package postgres

// Test helpers for the external test package (benchmarks that import
// bench, which imports app, which imports this package).
var (
	NewSchema      = newSchema
	OpenAt         = openAt
	AdminConn      = adminConn
	TestDSN        = testDSN
	WithSearchPath = withSearchPath
	QuietLogger    = quietLogger
	Words          = words
)

// ItemCacheLen returns the number of items in the store's item cache.
func (s *Store) ItemCacheLen() int { return s.items.Len() }
