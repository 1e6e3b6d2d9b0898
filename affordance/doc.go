// Package affordance suggests next actions ("affordances") from the
// evidence of a context pack: retry failing tests with healing, fix a
// selector, rerun flaky tests, ask for more context, escalate to a human.
//
// Rules are data, not code: a Rule says which evidence items count toward
// it (kinds, tags, keywords, metadata values), how many must match, how
// confident the suggestion is and which parameters to collect from the
// matching items. DefaultRules holds the item contract's table; ParseRules reads
// more from JSON, so adding a rule never touches the pack builder.
//
// Suggest only sees what it is given. The pack builder gives it the items
// as delivered (after policy and redaction, with redacted values taken out
// of the content), so nothing dropped or redacted can trigger an affordance
// or leak into its parameters.
package affordance
