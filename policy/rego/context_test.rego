# Rego unit tests of the bundled policy. Run them with `opa test policy/rego`
# or `go test ./policy/` (TestRegoUnitTests runs them through OPA's tester).
package cmo.context_test

import data.cmo.context

specialist(level, groups) := {"type": "specialist", "id": "tester", "securityLevel": level, "authorizedGroups": groups}

item(metadata) := {"id": "mem-1", "kind": "note", "text": "t", "content": {"personalData": {"email": "a@b.c"}}, "metadata": metadata}

decide(level, groups, metadata) := d if {
	d := context with input as {"specialist": specialist(level, groups), "item": item(metadata)}
}

test_plain_item_allowed if {
	d := decide("public", [], {"trust": 0.9, "sensitivity": 0.1})
	d.allow
	not d.redact
	d.redactedFields == []
	d.reason == "allowed"
}

test_missing_metadata_allowed if {
	d := decide("public", [], {})
	d.allow
	d.reason == "allowed"
}

# Rule 1: sensitivity.

test_sensitive_denied_to_public if {
	d := decide("public", [], {"sensitivity": 0.71})
	not d.allow
	d.reason == "sensitivity"
}

test_sensitive_denied_to_internal if {
	not decide("internal", [], {"sensitivity": 0.9}).allow
}

test_sensitive_allowed_to_confidential if {
	decide("confidential", [], {"sensitivity": 0.9}).allow
}

test_sensitive_allowed_to_restricted if {
	decide("restricted", [], {"sensitivity": 1}).allow
}

test_sensitivity_exactly_0_7_allowed_to_public if {
	decide("public", [], {"sensitivity": 0.7}).allow
}

test_sensitive_denied_to_unknown_level if {
	d := decide("secret-agent", [], {"sensitivity": 0.8})
	not d.allow
	d.reason == "sensitivity"
}

test_sensitive_denied_without_specialist if {
	not context.allow with input as {"item": item({"sensitivity": 0.8})}
}

# Rule 2: PII.

test_pii_redacted_with_the_text if {
	d := decide("internal", [], {"containsPII": true, "piiFields": ["$.content.personalData"]})
	d.allow
	d.redact
	d.redactedFields == ["$.content.personalData", "$.text"]
	d.reason == "pii"
}

test_pii_clean_text_is_kept if {
	d := decide("internal", [], {"containsPII": true, "piiFields": ["$.content.personalData"], "textClean": true})
	d.redact
	d.redactedFields == ["$.content.personalData"]
}

test_pii_text_named_once if {
	d := decide("internal", [], {"containsPII": true, "piiFields": ["$.text", "$.content.a"]})
	d.redactedFields == ["$.text", "$.content.a"]
}

test_pii_without_fields_redacts_content_and_text if {
	d := decide("internal", [], {"containsPII": true, "piiFields": []})
	d.allow
	d.redact
	d.redactedFields == ["$.content", "$.text"]
}

test_pii_without_fields_and_clean_text_redacts_content if {
	d := decide("internal", [], {"containsPII": true, "textClean": true})
	d.redactedFields == ["$.content"]
}

test_clean_text_without_the_pii_flag_changes_nothing if {
	d := decide("internal", [], {"textClean": true})
	not d.redact
	d.redactedFields == []
}

test_pii_fields_ignored_when_not_flagged if {
	d := decide("internal", [], {"containsPII": false, "piiFields": ["$.text"]})
	not d.redact
}

test_pii_denied_item_not_redacted if {
	d := decide("internal", [], {"containsPII": true, "piiFields": ["$.text"], "hasCredentials": true})
	not d.allow
	not d.redact
	d.reason == "credentials"
}

# Rule 3: credentials.

test_credentials_denied_even_to_restricted if {
	d := decide("restricted", [], {"hasCredentials": true})
	not d.allow
	d.reason == "credentials"
}

test_credentials_false_allowed if {
	decide("public", [], {"hasCredentials": false}).allow
}

# Rule 4: trust.

test_low_trust_denied if {
	d := decide("restricted", [], {"trust": 0.29})
	not d.allow
	d.reason == "low_trust"
}

test_trust_exactly_0_3_allowed if {
	decide("public", [], {"trust": 0.3}).allow
}

# Rule 5: groups.

test_group_restricted_without_overlap_denied if {
	d := decide("restricted", ["dev"], {"restrictedToGroups": ["qa", "ops"]})
	not d.allow
	d.reason == "group_restricted"
}

test_group_restricted_with_overlap_allowed if {
	decide("public", ["dev", "ops"], {"restrictedToGroups": ["qa", "ops"]}).allow
}

test_group_restricted_no_groups_denied if {
	not decide("restricted", [], {"restrictedToGroups": ["qa"]}).allow
}

test_empty_restriction_allowed if {
	decide("public", [], {"restrictedToGroups": []}).allow
}

# Combinations: every denying rule is named, sorted.

test_all_denials_named if {
	d := decide("public", ["dev"], {
		"sensitivity": 0.95, "hasCredentials": true, "trust": 0.1,
		"restrictedToGroups": ["qa"], "containsPII": true, "piiFields": ["$.text"],
	})
	not d.allow
	not d.redact
	d.reason == "credentials,group_restricted,low_trust,sensitivity"
}

test_sensitive_pii_for_cleared_specialist_redacted if {
	d := decide("confidential", ["qa"], {
		"sensitivity": 0.9, "restrictedToGroups": ["qa"],
		"containsPII": true, "piiFields": ["$.content.personalData.email", "$.text"],
	})
	d.allow
	d.redact
	d.redactedFields == ["$.content.personalData.email", "$.text"]
}
