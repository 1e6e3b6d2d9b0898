//go:build !linux

package cputime

import "time"

// threadKnown says whether Thread reads a real figure: only Linux has a
// thread's own CPU time.
const threadKnown = false

// Thread is unknown here: 0.
func Thread() time.Duration { return 0 }
