// Package policy decides, per memory item and specialist, whether the item
// may be delivered and what of it must be redacted.
//
// Engine is a compiled policy with its queries prepared once (New): the
// bundled default (rego/context.rego, package cmo.context, the five rules of
// docs/concepts.md), a directory of Rego files, or an OPA bundle (.tar.gz)
// (WithPolicyDir). It decides one item (Decide), all candidates of a request
// in one evaluation (DecideBatch), and the optional pack-level settings of
// the rule pack (h4r.PackSettings). Input keys of input.item that no rule reads
// are left out of the input, which cannot change a decision; candidates
// that then look alike are decided once, and a deterministic policy's
// decisions are remembered by input (WithDecisionMemo). Explain says which
// rules fired.
//
// Compiled predicates (compiled.go) make cold decisions cheap: per
// specialist as the policy sees it, OPA partially evaluates the decision
// with input.item unknown, and the residual is compiled to Go closures that
// decide an item without OPA's evaluator. A residual beyond the compiler,
// and any item it cannot decide, is evaluated by OPA, so decisions and
// errors are OPA's either way (FuzzCompiledAgreesWithOPA);
// WithCompiledPredicates(0) turns them off, CompiledFor says why a policy
// is not compiled.
//
// Live holds the Engine in use and swaps in a new one when the policy
// directory or bundle changes (WithWatch); a policy that does not compile is
// refused and the old one stays. Remote asks an OPA server instead
// (POST {url}/v1/data/cmo/context). Cache keeps decisions per policy
// revision, specialist and item version in front of either.
//
// LocalRules is the same five rules written in Go. It is the fallback the
// slicer uses when a decision cannot be made and SCS_OPA_FALLBACK_LOCAL is
// set; tests keep the two in agreement.
//
// A decision that cannot be made (an evaluation error, an undefined or
// ill-typed result, an unreachable OPA) is an error, never a default allow:
// callers fail closed. PERFORMANCE.md says what a decision costs and how to
// keep a policy fast.
package policy
