// Package scs is the policy slicer: it takes ranked candidates and decides,
// item by item, what a specialist receives.
//
// For every item, in rank order, Slicer.Slice asks the policy (a Decider,
// normally the embedded OPA engine of package policy) whether the item may
// be delivered and which JSONPaths to redact, redacts a copy of the item,
// and then fits the allowed items into the byte, token and item budgets.
// Every item ends with exactly one verdict: kept, or left out with the
// reason (policy, budget_bytes, budget_tokens, budget_items) and a detail.
//
// Fail closed. An item whose decision cannot be made (the policy errors or
// returns something unreadable, or asks to redact an invalid path) is
// dropped with reason policy. Only if a fallback Decider is set (the Go
// rules of policy.LocalRules, SCS_OPA_FALLBACK_LOCAL=true) does the fallback
// decide instead, and the outcome's warnings say so.
//
// Budgets measure the item as delivered: the JSON of sources.Delivered after
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
package scs
