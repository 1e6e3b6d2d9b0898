// Package docs is H4R's manual: the Markdown pages beside this file, and
// the tests that keep them, the README and the code comments honest.
//
// TestNoHistoryOrOutsideReferences reads every tracked file and fails on
// prose that narrates the project's history (rounds, issue numbers, commit
// hashes) or points at documents that are not in the repository. The
// examples of the README and of these pages are run by cmd/h4r's
// TestDocExamples against the demo server, or against the server their
// marker names (<!-- example: NAME server=tenants -->; its doc comment
// lists the servers).
package docs
