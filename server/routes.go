package server

import (
	"github.com/labstack/echo/v5"

	"github.com/h4r/h4r/auth"
)

// route is one endpoint with who may call it, declared together so that
// a route cannot be added without its access (authenticate reads it).
type route struct {
	method, path string
	handler      echo.HandlerFunc
	access       routeAccess
}

// Route classes, for the tables below.
var (
	public      = routeAccess{public: true}
	anyKey      = routeAccess{}
	readRoute   = routeAccess{class: auth.RouteRead, limited: true}
	ingestRoute = routeAccess{class: auth.RouteIngest, limited: true}
	adminRoute  = routeAccess{class: auth.RouteAdmin, limited: true}
	// mcpRoute: any valid key may open an MCP session (each tool checks
	// its class), and every request to /mcp counts against the key's rate
	// limit, in a bucket of its own (auth.RouteMCP) so that MCP traffic and
	// REST traffic do not use up each other's.
	mcpRoute = routeAccess{limited: true, bucket: auth.RouteMCP}
)

// coreRoutes are the context pack, the envelopes, items, health, the
// description and the operations routes. Each feature adds its own table
// (see routeTables) in its own file.
func (s *Server) coreRoutes() []route {
	return []route{
		{"POST", "/v1/context-pack", s.contextPack, readRoute},
		{"POST", "/v1/a2a", s.a2a, readRoute},
		{"POST", "/v1/items", s.upsertItems, ingestRoute},
		// GET returns an item as stored, before policy, so it is admin.
		{"GET", "/v1/items/:id", s.getItem, adminRoute},
		{"DELETE", "/v1/items/:id", s.deleteItem, ingestRoute},
		{"GET", "/health/live", s.live, public},
		{"GET", "/health/ready", s.ready, public},
		{"GET", "/openapi.json", s.openAPI, anyKey},
		{"GET", "/metrics", s.serveMetrics, adminRoute},
		{"GET", "/v1/policy", s.getPolicy, adminRoute},
	}
}

// routeTables lists every table of routes the server serves.
func (s *Server) routeTables() [][]route {
	return [][]route{
		s.coreRoutes(),
		s.traceRoutes(),
		s.decisionRoutes(),
		s.memoryRoutes(),
		s.countBatches(s.mcpRoutes()),
		s.ragRoutes(),
		s.a2aProtoRoutes(),
		s.bridgeRoutes(),
		s.ingestRoutes(),
		s.consoleRoutes(),
		s.browseRoutes(),
	}
}

// register adds every route to e and records its access.
func (s *Server) register(e *echo.Echo) {
	s.access = map[string]routeAccess{}
	for _, table := range s.routeTables() {
		for _, r := range table {
			e.Add(r.method, r.path, r.handler)
			s.access[r.method+" "+r.path] = r.access
		}
	}
}

// accessOf says who may call a route. No route matched (404, 405): any
// valid key, so that a caller without one learns nothing about which
// routes exist. A route added to the router outside the tables (a test's)
// is admin-only, so that a route is never open by mistake.
func (s *Server) accessOf(method, path string) routeAccess {
	if method+" "+path == " " {
		return anyKey
	}
	if a, ok := s.access[method+" "+path]; ok {
		return a
	}
	return adminRoute
}
