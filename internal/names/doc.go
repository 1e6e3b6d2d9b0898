// Package names holds many short strings, such as the ids of a million
// items, by number in one array of bytes: no allocation and no pointer per
// string, where a []string gives the garbage collector one object to find
// and mark per string at every collection.
package names
