// Package timeref finds a reference to a time in a question ("yesterday",
// "two weeks ago", "last May", "in March 2023", "on 2023-05-14") and turns
// it into a window of time, relative to the moment the question is asked.
//
// The engine uses the window as evidence: a memory made inside it is more
// likely the one the question is about. The parser reads text from
// outside, so it is bounded (it looks at the first MaxTextBytes of a
// question and uses regular expressions that run in linear time) and
// never fails: text that names no time has no window.
package timeref
