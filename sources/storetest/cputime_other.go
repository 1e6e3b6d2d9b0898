//go:build !unix

package storetest

import "time"

// cpuTime is unknown here; BenchHops then reports 0 CPU time.
func cpuTime() time.Duration { return 0 }
