// Package pack builds a context pack from the ranked, sliced entries of a
// request: the delivered results, an extractive TL;DR with citations, the
// causal graph among the results, suggested actions (affordances), the
// specialist's agent slice and the explainability report that says why each
// candidate was kept or left out.
//
// The builder only ever reads the delivered (policy-redacted) form of kept
// entries when it writes text: the TL;DR, the graph and the affordances are
// computed from kept items alone, so nothing that policy or budgets left out
// can leak into them.
package pack
