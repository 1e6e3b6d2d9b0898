package server

import (
	_ "embed"
	"net/http"

	"github.com/labstack/echo/v5"
)

// openAPISpec describes every route this server serves. A test compares its
// paths with the router's, so the two cannot drift apart.
//
//go:embed openapi.json
var openAPISpec []byte

func (s *Server) openAPI(c *echo.Context) error {
	return c.Blob(http.StatusOK, "application/json", openAPISpec)
}
