# A team policy the compiled predicates handle whole.
package cmo.context

import data.cmo.lib

cleared := {"confidential", "restricted"}

public_kinds := {"test_failure", "fix", "note"}

secret_pattern := `(?i)(api[_-]?key|password|BEGIN [A-Z ]*PRIVATE KEY)`

deny contains "sensitivity" if {
	input.item.metadata.sensitivity > 0.7
	not input.specialist.securityLevel in cleared
}

deny contains "credentials" if input.item.metadata.hasCredentials

deny contains "low_trust" if input.item.metadata.trust < 0.3

deny contains "group_restricted" if {
	count(input.item.metadata.restrictedToGroups) > 0
	not lib.shares_group
}

deny contains "secret_in_text" if regex.match(secret_pattern, input.item.text)

deny contains "kind_not_public" if {
	input.specialist.securityLevel == "public"
	not input.item.kind in public_kinds
}

deny contains "draft" if "draft" in lib.tags

deny contains "failed_for_public" if {
	input.item.metadata.status == "failed"
	input.specialist.securityLevel == "public"
}

deny contains "severe" if object.get(input.item.content, "severity", 0) >= 9

deny contains "stale" if {
	input.item.metadata.novelty < 0.05
	input.item.metadata.importance < 0.2
}

default allow := false

allow if count(deny) == 0

default redactedFields := []

redactedFields := sort([f | some f in input.item.metadata.piiFields; startswith(f, "$.")]) if {
	allow
	input.item.metadata.containsPII
}

default redact := false

redact if count(redactedFields) > 0

default reason := "allowed"

reason := concat(",", sort(deny)) if count(deny) > 0

reason := sprintf("pii:%d", [count(redactedFields)]) if redact
