// Package trim drops the spare room that appends leave in slices built
// once and then only read, such as an index's arrays after a load: Go
// grows a slice by up to a quarter past what it holds at these sizes, and
// for an index of a million items that room is megabytes.
package trim
