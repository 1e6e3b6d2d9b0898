package server

import (
	"context"

	"github.com/labstack/echo/v5"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/memory"
)

// MemoryTools are the retrieval contract's memory tools (memory.Service). Writes
// take no specialist: clearance only decides what reads return.
type MemoryTools interface {
	Write(ctx context.Context, spec h4r.Specialist, req memory.WriteRequest) (memory.WriteResult, error)
	Read(ctx context.Context, spec h4r.Specialist, req memory.ReadRequest) (memory.ReadResult, error)
	Link(ctx context.Context, spec h4r.Specialist, req memory.LinkRequest) (memory.LinkResult, error)
	Stats(ctx context.Context, spec h4r.Specialist, req memory.StatsRequest) (memory.StatsResult, error)
}

// WithMemory serves the memory tools at /v1/memory/* (app.App.Memory).
func WithMemory(m MemoryTools) Option { return func(s *Server) { s.memory = m } }

// memoryRoutes are the retrieval contract's memory.write, memory.read, memory.link
// and memory.stats as HTTP routes: writing and linking are ingest, reading
// and counting are read (policy-sliced).
func (s *Server) memoryRoutes() []route {
	return []route{
		{"POST", "/v1/memory/write", s.memoryWrite, ingestRoute},
		{"POST", "/v1/memory/read", s.memoryRead, readRoute},
		{"POST", "/v1/memory/link", s.memoryLink, ingestRoute},
		{"POST", "/v1/memory/stats", s.memoryStats, readRoute},
	}
}

// memoryCall decodes a memory tool's body strictly into In, runs call
// with the caller's specialist (the key's principal) and answers its
// result.
func memoryCall[In, Out any](s *Server, c *echo.Context, call func(context.Context, h4r.Specialist, In) (Out, error)) error {
	if s.memory == nil {
		return h4r.Errorf(h4r.EUNAVAILABLE, "", "the memory tools are not configured on this server")
	}
	return answerCall(s, c, call)
}

func (s *Server) memoryWrite(c *echo.Context) error {
	return memoryCall(s, c, func(ctx context.Context, spec h4r.Specialist, in memory.WriteRequest) (memory.WriteResult, error) {
		return s.memory.Write(ctx, spec, in)
	})
}

func (s *Server) memoryRead(c *echo.Context) error {
	return memoryCall(s, c, func(ctx context.Context, spec h4r.Specialist, in memory.ReadRequest) (memory.ReadResult, error) {
		return s.memory.Read(ctx, spec, in)
	})
}

func (s *Server) memoryLink(c *echo.Context) error {
	return memoryCall(s, c, func(ctx context.Context, spec h4r.Specialist, in memory.LinkRequest) (memory.LinkResult, error) {
		return s.memory.Link(ctx, spec, in)
	})
}

func (s *Server) memoryStats(c *echo.Context) error {
	return memoryCall(s, c, func(ctx context.Context, spec h4r.Specialist, in memory.StatsRequest) (memory.StatsResult, error) {
		return s.memory.Stats(ctx, spec, in)
	})
}
