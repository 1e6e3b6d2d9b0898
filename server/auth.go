package server

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/auth"
	"github.com/h4r/h4r/internal/jsonstrict"
)

// Authenticator maps an API key to its principal (auth.Keys).
type Authenticator interface {
	Authenticate(key string) (*auth.Principal, bool)
}

const principalKey = "h4r.principal"

// routeAccess says who may call a route: nobody needs a key for the health
// probes; every other route needs a key allowed the route's class (routes.go).
type routeAccess struct {
	public  bool
	class   auth.Route // "" for any valid key
	limited bool       // counts against the key's rate limit of its class
	bucket  auth.Route // the limit's bucket when not class's (mcpRoute)
	form    bool       // takes HTML forms: the console (console.go)
}

// authenticate checks the bearer key, the route class and the key's rate
// limit for the class (each class its own bucket: auth.Limiter). Without
// an Authenticator (no keys configured) every request passes and the
// specialist is whoever the request names; cmd/h4r then serves on loopback
// only, and guardBrowser keeps web pages out.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		ri := c.RouteInfo()
		access := s.accessOf(ri.Method, ri.Path)
		if s.keys == nil || access.public {
			return next(c)
		}
		key, ok := bearer(c.Request().Header.Get("Authorization"))
		if !ok {
			c.Response().Header().Set("WWW-Authenticate", `Bearer realm="h4r"`)
			return h4r.Errorf(h4r.EUNAUTH, "", "an API key is required: send Authorization: Bearer <key>")
		}
		p, ok := s.keys.Authenticate(key)
		if !ok {
			c.Response().Header().Set("WWW-Authenticate", `Bearer realm="h4r", error="invalid_token"`)
			return h4r.Errorf(h4r.EUNAUTH, "", "unknown API key")
		}
		c.Set(principalKey, p)
		if access.class != "" && !p.Allows(access.class) {
			return h4r.Errorf(h4r.EFORBIDDEN, "", "this key may not call %s routes (its routes: %s)", access.class, joinRoutes(p.Routes))
		}
		if access.limited && s.limiter != nil {
			bucket := access.class
			if access.bucket != "" {
				bucket = access.bucket
			}
			if ok, wait := s.limiter.Allow(p, bucket, s.now()); !ok {
				secs := int(math.Ceil(wait.Seconds()))
				c.Response().Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
				return h4r.Errorf(h4r.EEXHAUSTED, "", "rate limit of this key for %s routes reached; retry in %d s", bucket, max(secs, 1))
			}
		}
		return next(c)
	}
}

// bearer returns the key of an "Authorization: Bearer <key>" header.
func bearer(header string) (string, bool) {
	scheme, key, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	key = strings.TrimSpace(key)
	return key, key != ""
}

func joinRoutes(rs []auth.Route) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = string(r)
	}
	return strings.Join(s, ", ")
}

func principal(c *echo.Context) *auth.Principal {
	p, _ := c.Get(principalKey).(*auth.Principal)
	return p
}

// mayAudit reports whether the caller's packs may explain what policy hid
// from it: a key with the audit or admin class, or, without keys, when
// WithAnonymousAudit allows it.
func (s *Server) mayAudit(c *echo.Context) bool {
	if p := principal(c); p != nil {
		return p.MayAudit()
	}
	return s.keys == nil && s.anonymousAudit
}

// claim is a specialist as a request names it (a context-pack body's
// specialist, an envelope's meta.from). Its fields are pointers so that a
// field left out keeps the principal's value instead of reading as public
// or as no groups.
type claim struct {
	Type             *string            `json:"type"`
	ID               *string            `json:"id"`
	SecurityLevel    *h4r.SecurityLevel `json:"securityLevel"`
	AuthorizedGroups *[]string          `json:"authorizedGroups"`
}

// identity returns the specialist a request is answered for. With a key,
// it is the key's principal, narrowed by what the request claims (a lower
// level, fewer groups); a claim that names another specialist or more
// clearance is permission_denied, naming the field. Without keys, the claim
// is the identity (the embedded demo on loopback).
func (s *Server) identity(c *echo.Context, field string, raw json.RawMessage) (h4r.Specialist, error) {
	p := principal(c)
	if p == nil {
		return specialist(&s.bodies, field, raw)
	}
	return narrow(&s.bodies, p.Specialist, field, raw)
}

// narrow applies a claimed specialist (raw, at field) to an authenticated
// principal: the result is the principal with the claim's lower level or
// fewer groups, or permission_denied naming what the claim would raise.
func narrow(d *jsonstrict.Decoder, principal h4r.Specialist, field string, raw json.RawMessage) (h4r.Specialist, error) {
	spec := principal
	spec.AuthorizedGroups = slices.Clone(spec.AuthorizedGroups)
	if len(raw) == 0 || string(raw) == "null" {
		return spec, nil
	}
	var cl claim
	if err := d.Decode(raw, &cl, field); err != nil {
		return h4r.Specialist{}, err
	}
	denied := func(name, format string, args ...any) error {
		return h4r.Errorf(h4r.EFORBIDDEN, field+"."+name, format, args...)
	}
	if cl.ID != nil && *cl.ID != spec.ID {
		return h4r.Specialist{}, denied("id", "this API key speaks for %q; a request cannot name another specialist", spec.ID)
	}
	if cl.Type != nil && *cl.Type != spec.Type {
		return h4r.Specialist{}, denied("type", "this API key speaks for a %q; a request cannot change its type", spec.Type)
	}
	if cl.SecurityLevel != nil {
		if *cl.SecurityLevel > spec.SecurityLevel {
			return h4r.Specialist{}, denied("securityLevel", "this API key is cleared for %s; a request may lower its level, never raise it to %s", spec.SecurityLevel, *cl.SecurityLevel)
		}
		spec.SecurityLevel = *cl.SecurityLevel
	}
	if cl.AuthorizedGroups != nil {
		if err := (h4r.Specialist{AuthorizedGroups: *cl.AuthorizedGroups}).CheckGroups(field); err != nil {
			return h4r.Specialist{}, err
		}
		groups := []string{}
		for i, g := range *cl.AuthorizedGroups {
			if !slices.Contains(principal.AuthorizedGroups, g) {
				return h4r.Specialist{}, denied(fmt.Sprintf("authorizedGroups[%d]", i), "this API key is not in group %q; a request may drop groups, never add them", g)
			}
			groups = append(groups, g)
		}
		spec.AuthorizedGroups = groups
	}
	// The checks above are the reasons; this is the rule (h4r.Specialist.Narrows).
	if !spec.Narrows(principal) {
		return h4r.Specialist{}, h4r.Errorf(h4r.EFORBIDDEN, field, "the claimed specialist does not narrow this API key's principal")
	}
	return spec, nil
}
