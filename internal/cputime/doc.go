// Package cputime reads the CPU time a process or a thread has used, for
// benchmarks: on a shared, loaded machine wall time counts the time other
// processes held the cores, CPU time does not. One copy serves every
// package's benchmarks.
package cputime
