// Package gctune bounds the garbage the Go collector lets pile up above
// the live heap to a fixed headroom, so that a process whose live heap is
// large does not use twice its size.
//
// Go's collector starts a cycle when the heap has grown by GOGC percent
// (100 by default) over what the last cycle found live. That suits a small
// heap; for a service holding a large index it means twice the index in
// memory: at 1M items H4R's live heap is about 1.5 GB and its resident set
// was 3.7 GB. A soft memory limit (GOMEMLIMIT) caps that, but it is one
// number for every corpus size, and a live heap that grows past it makes
// the collector run without pause. The tuner instead sets GOGC after each
// cycle to headroom / live heap, within a ceiling (the GOGC the process
// started with, or WithCeiling's) and a floor: a large heap collects when
// the headroom is used up (the idea of Uber's GOGCTuner), and with a
// ceiling above 100 a small one collects less often than Go's default
// pacing would. README's "Speed" gives the measurements.
package gctune
