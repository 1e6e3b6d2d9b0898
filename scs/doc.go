// Package scs is the policy slicer: it takes ranked candidates and decides,
// item by item, what a specialist receives.
//
// Slicer.Slice takes one snapshot of the policy (a Snapshotter such as
// policy.Live hands out the policy in use, so a request in flight during a
// reload finishes on the policy it started with), asks it for pack-level
// settings (PackPolicy: budgets that can only narrow the request's), and
// decides every item: first from the policy's decision cache when it has
// one (CacheAnswerer, on the request's goroutine), then the rest in
// batches when the policy can (BatchDecider, one OPA evaluation per
// batch), else one by one. It then redacts a copy of each
// allowed item and fits the allowed items into the byte, token and item
// budgets. Every drop and redaction can be written to a decision log
// (WithDecisionLog; the request id comes from WithRequestID on the context).
// Every item ends with exactly one verdict: kept, or left out with the
// reason (policy, budget_bytes, budget_tokens, budget_items) and a detail.
//
// Fail closed. An item whose decision cannot be made (the policy errors or
// returns something unreadable, a remote OPA does not answer, or the policy
// asks to redact an invalid path) is dropped with reason policy; pack
// settings that cannot be read drop every item. Only if a fallback Decider
// is set (the Go rules of policy.LocalRules, SCS_OPA_FALLBACK_LOCAL=true)
// does the fallback decide instead, and the outcome's warnings say so.
//
// Budgets measure the item as delivered: the JSON of h4r.Delivered after
// redaction, its length in bytes and its exact token count. The walk goes
// through the allowed items in rank order and stops at the first item that
// does not fit what is left: that item and every allowed item after it are
// left out with the reason of the limit that stopped the walk; once MaxItems
// items are kept, the rest get budget_items.
//
// One exception: an item that alone exceeds the whole byte or token budget
// could never be delivered, whatever came before it. It is left out with
// its budget reason and the walk continues, so that one giant memory ranked
// first does not empty every pack.
//
// Redaction never changes the input items, which are shared across
// requests: redacted content is a deep copy.
//
// One gate. Whatever leaves H4R, and whatever text is derived from an item
// (a suggestion, a match reason, a summary), is built from a Cleared: the
// redacted copy of an item the policy allowed, with the policy revision and
// the item version it was decided at. Only this package makes one: a kept
// Verdict carries it, and Slicer.Clear returns the allowed items as Cleared
// without budgets. Permitted, which says only allow or deny, is for graph
// traversal inside the engine; a test (TestOneGate) lists the packages
// that may call it or build an item's unredacted delivered form.
package scs
