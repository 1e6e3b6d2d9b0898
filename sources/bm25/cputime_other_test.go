//go:build !linux

package bm25_test

import "testing"

// measureCPU reports nothing where the thread's CPU time is not known.
func measureCPU(*testing.B) (done func()) { return func() {} }

// measureProcessCPU reports nothing where the process's CPU time is not
// known.
func measureProcessCPU(*testing.B) (done func()) { return func() {} }
