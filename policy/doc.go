// Package policy decides, per memory item and specialist, whether the item
// may be delivered and what of it must be redacted.
//
// Engine evaluates Rego with an embedded OPA: the bundled default policy
// (rego/context.rego, package cmo.context, the five rules of DESIGN.md) or
// the user's own policy directory (SCS_POLICY_DIR). The query is prepared
// once in New; Decide evaluates it per item and is safe for concurrent use.
//
// LocalRules is the same five rules written in Go. It is the fallback the
// slicer uses when Rego evaluation fails and SCS_OPA_FALLBACK_LOCAL is set;
// tests keep the two in agreement.
//
// A decision that cannot be made (an evaluation error, an undefined or
// ill-typed result) is an error, never a default allow: callers fail closed.
package policy
