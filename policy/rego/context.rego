# The bundled default policy of H4R: the five rules of docs/concepts.md.
#
# Input, per item:
#   {"specialist": {"type", "id", "securityLevel", "authorizedGroups"},
#    "item": {"id", "kind", "text", "content", "metadata"}}
# H4R fills metadata defaults (importance, trust, sensitivity, novelty) before
# evaluation, but every rule below still tolerates a missing key, so that the
# policy fails towards "deny" rather than towards an evaluation error.
#
# The decision is the package document, data.cmo.context:
#   {"allow": bool, "redact": bool, "redactedFields": [JSONPath], "reason": string}
package cmo.context

# Levels allowed to see items with sensitivity above 0.7. Anything else,
# including an unknown or missing level, is treated as not cleared.
cleared_levels := {"confidential", "restricted"}

# Every rule reads the metadata keys it needs by name
# (input.item.metadata.trust, ...) and nothing else of the item: H4R then
# gives the policy only those keys, and decides items that agree on them
# (and specialists that agree) once per request instead of once per item
# (see PERFORMANCE.md). A rule that reads input.item.content or the whole
# metadata object is fine too; it just costs more.

default security_level := ""

security_level := input.specialist.securityLevel

default authorized_groups := []

authorized_groups := input.specialist.authorizedGroups

# deny holds the name of every rule that denies the item.

# Rule 1: sensitive items only for cleared specialists.
deny contains "sensitivity" if {
	input.item.metadata.sensitivity > 0.7
	not security_level in cleared_levels
}

# Rule 3: credentials are never delivered.
deny contains "credentials" if input.item.metadata.hasCredentials == true

# Rule 4: low-trust items are not delivered.
deny contains "low_trust" if input.item.metadata.trust < 0.3

# Rule 5: group-restricted items need a shared group.
deny contains "group_restricted" if {
	count(restricted_groups) > 0
	not shares_group
}

default restricted_groups := []

restricted_groups := input.item.metadata.restrictedToGroups

shares_group if {
	some group in restricted_groups
	group in authorized_groups
}

# Rule 2: PII is redacted. An item with containsPII has its piiFields
# redacted and its text too, unless it says its text is clean (textClean):
# piiFields name where the structured data is, but a text written about the
# same record is where it leaks. An item that names no field has its whole
# content redacted (and its text, unless clean): nothing that might hold
# the data is delivered.
default pii_fields := []

pii_fields := input.item.metadata.piiFields

text_clean if input.item.metadata.textClean == true

# Written as pairs of rules with exclusive conditions rather than with
# else, so that partial evaluation leaves residuals the compiled predicates
# handle (policy/compiled.go does not compile else).
names_fields if count(pii_fields) > 0

named_fields := pii_fields if names_fields

named_fields := ["$.content"] if not names_fields

redacts_text if {
	not text_clean
	not "$.text" in named_fields
}

pii_redactions := array.concat(named_fields, ["$.text"]) if redacts_text

pii_redactions := named_fields if not redacts_text

default allow := false

allow if count(deny) == 0

default redact := false

redact if {
	allow
	input.item.metadata.containsPII == true
}

default redactedFields := []

redactedFields := pii_redactions if redact

# reason names the denying rules (sorted, comma-separated), else "pii" for a
# redacted item, else "allowed".
default reason := "allowed"

reason := concat(",", sort(deny)) if count(deny) > 0

reason := "pii" if redact
