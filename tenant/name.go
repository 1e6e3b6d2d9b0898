package tenant

import (
	"regexp"

	"github.com/h4r/h4r"
)

const (
	// Default is the implicit tenant: keys without a tenant, requests
	// without a key, and every single-tenant install.
	Default = "default"
	// Header names the tenant of an operator key's request.
	Header = "X-H4R-Tenant"
	// maxNameLen keeps h4r_tenant_NAME within Postgres's 63-byte
	// identifiers with room to spare.
	maxNameLen = 40
)

// namePattern is what a tenant name may be: it becomes a directory name,
// part of a Postgres schema and role name, a NATS subject token and a
// Qdrant collection suffix, so it is kept to what all of them accept
// unquoted.
var namePattern = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// CheckName returns an invalid-argument error unless name is a valid
// tenant name.
func CheckName(name string) error {
	if len(name) > maxNameLen || !namePattern.MatchString(name) {
		return h4r.Errorf(h4r.EINVALID, "tenant", "tenant name %q: want a lowercase letter, then lowercase letters, digits or _, at most %d in all", name, maxNameLen)
	}
	return nil
}

// schemaName is the Postgres schema, and role, of a tenant.
func schemaName(name string) string { return "h4r_tenant_" + name }
