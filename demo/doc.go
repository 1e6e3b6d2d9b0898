// Package demo holds the demo corpus: the memory of an end-to-end test team
// working on a web shop with Playwright (test failures, selector changes,
// flaky tests, fixes, commits, decisions, incidents, runbooks and the causal
// links between them), embedded in the binary so that `h4r serve` answers
// useful questions on first start.
//
// The corpus also exercises every policy rule and budget of the README's
// first request: an item with a credential, sensitive and group-restricted
// items, items with personal data to redact, a low-trust item, and long CI
// logs that a small token budget has to drop. testdata/queries.json labels
// queries over it for the ranking golden test.
package demo
