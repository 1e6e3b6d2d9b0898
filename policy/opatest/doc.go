// Package opatest runs OPA's own server (github.com/open-policy-agent/opa/v1/server)
// in-process on loopback, for tests of remote policy evaluation against the
// real thing.
package opatest
