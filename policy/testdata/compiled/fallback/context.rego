# A policy the compiled predicates refuse (`every` stays in the residual):
# OPA decides every item.
package cmo.context

default allow := false

allow if {
	every g in input.item.metadata.restrictedToGroups {
		g in input.specialist.authorizedGroups
	}
	input.item.metadata.trust >= 0.3
}

reason := "allowed" if allow

reason := "not every group shared, or low trust" if not allow

redactedFields := input.item.metadata.piiFields if {
	allow
	input.item.metadata.containsPII
}

redact if count(redactedFields) > 0
