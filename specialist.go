package h4r

import (
	"encoding/json"
	"slices"
)

// SecurityLevel is a specialist's clearance. Levels are ordered: a higher
// level may see everything a lower one may.
type SecurityLevel int

// Security levels, lowest first.
const (
	Public SecurityLevel = iota
	Internal
	Confidential
	Restricted
)

func (l SecurityLevel) String() string {
	switch l {
	case Public:
		return "public"
	case Internal:
		return "internal"
	case Confidential:
		return "confidential"
	case Restricted:
		return "restricted"
	}
	return "unknown"
}

// ParseSecurityLevel parses "public", "internal", "confidential" or
// "restricted".
func ParseSecurityLevel(s string) (SecurityLevel, bool) {
	for l := Public; l <= Restricted; l++ {
		if l.String() == s {
			return l, true
		}
	}
	return Public, false
}

func (l SecurityLevel) MarshalJSON() ([]byte, error) { return json.Marshal(l.String()) }

// UnmarshalJSON reads a level name. Its errors name no field: the caller
// knows where the level was (jsonstrict.Decode adds the path).
func (l *SecurityLevel) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return Errorf(EINVALID, "", "security level must be a string: public, internal, confidential or restricted")
	}
	v, ok := ParseSecurityLevel(s)
	if !ok {
		return Errorf(EINVALID, "", "unknown security level %q (want public, internal, confidential or restricted)", s)
	}
	*l = v
	return nil
}

// Specialist is the agent asking for context, as the policy sees it
// (input.specialist).
type Specialist struct {
	Type             string        `json:"type"`
	ID               string        `json:"id"`
	SecurityLevel    SecurityLevel `json:"securityLevel"`
	AuthorizedGroups []string      `json:"authorizedGroups"`
}

// CheckGroups refuses more than MaxGroups authorizedGroups (a claim could
// otherwise repeat one group without end). field names the specialist in
// errors ("meta.from").
func (s Specialist) CheckGroups(field string) error {
	if n := len(s.AuthorizedGroups); n > MaxGroups {
		if field != "" {
			field += "."
		}
		return Errorf(EINVALID, field+"authorizedGroups", "at most %d authorizedGroups, got %d", MaxGroups, n)
	}
	return nil
}

// Anonymous is the specialist assumed when a request names none: public
// level, no groups.
func Anonymous() Specialist {
	return Specialist{Type: "specialist", ID: "anonymous", SecurityLevel: Public, AuthorizedGroups: []string{}}
}

// Narrows reports whether s claims no more than p: the same id, a level no
// higher, and only groups p has. A request may narrow the authenticated
// principal's clearance, never raise it.
func (s Specialist) Narrows(p Specialist) bool {
	if s.ID != p.ID || s.SecurityLevel > p.SecurityLevel {
		return false
	}
	for _, g := range s.AuthorizedGroups {
		if !slices.Contains(p.AuthorizedGroups, g) {
			return false
		}
	}
	return true
}
