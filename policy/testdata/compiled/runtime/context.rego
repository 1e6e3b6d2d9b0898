# A policy the compiled predicates compile but cannot decide every item
# with: to_number fails on a priority that is no number (OPA: an error),
# two reasons conflict for a tagged note (OPA: an error), and the
# redacted fields are a set (OPA's result reads it as a list). Those items
# fall back to OPA.
package cmo.context

default allow := false

allow if to_number(object.get(input.item.metadata, "priority", "0")) < 5

reason := "note" if input.item.kind == "note"

reason := "tagged" if "x" in input.item.metadata.tags

redactedFields := {f | some f in input.item.metadata.piiFields} if input.item.metadata.containsPII
