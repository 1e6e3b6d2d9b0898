// Package tenant serves several teams from one H4R without letting any
// of them reach another's data.
//
// Isolation is structural: each tenant gets a complete service of its own
// (app.Open over a configuration Config derives for it), so its store,
// full-text statistics, vectors, graph, bridge index, caches, rate-limit
// buckets, policy and commit-trace subjects are its own by construction,
// not by a filter every query must remember. On SQLite a tenant is a
// database file under DataDir/tenants/NAME; on Postgres a schema,
// h4r_tenant_NAME, reached through a role of the same name that holds
// privileges on that schema only, so that a query through one tenant's
// pool that names another's tables is refused by Postgres itself. The
// default tenant keeps the configuration as given: a single-tenant
// install is unchanged.
//
// A Router in front of the tenants' HTTP servers picks the tenant from
// the API key (auth.Principal.Tenant); operator keys name it per request
// in the X-H4R-Tenant header, and each such request is logged. The
// tenant never comes from a request body. Each tenant's server accepts
// only its own keys and operator keys (Scoped), a second guard behind the
// router.
package tenant
