package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"

	"github.com/h4r/h4r/bridge/bridgetest"
)

// The context bridge's load (--type bridge): the store is filled with
// trajectories through POST /v1/bridge/trajectories, and every request is
// a tool call on POST /v1/bridge whose problem is new (random words), so
// that the bridge's cache never answers: the context-bridge contract's NFR-1 measures
// the lookup, not the cache. The workload is the bridge benchmarks'
// (bridgetest).

// synthTrajectory returns a synthetic trajectory named name drawn from r.
func synthTrajectory(r *rand.Rand, name string) map[string]any {
	return map[string]any{
		"trajectory_id": name, "session_id": fmt.Sprintf("s%d", r.IntN(500)),
		"description": bridgetest.Problem(r, 3+r.IntN(4)), "domain": bridgetest.Domain(r), "tool_sequence": []string{"think"},
		"success_score": r.Float64(), "quality_score": r.Float64(),
	}
}

// bridgeCall returns the body of a tool call with a new problem.
func (lt *loadTest) bridgeCall() []byte {
	lt.mu.Lock()
	params := map[string]any{"content": bridgetest.Problem(lt.rng, 4), "domain": bridgetest.Domain(lt.rng)}
	lt.mu.Unlock()
	b, _ := json.Marshal(map[string]any{"tool": "think", "params": params})
	return b
}

// bridge sends a tool call. An answer is ok when it holds a context_bridge
// that is not degraded; 200 without one means the server's bridge is off,
// which run reports.
func (lt *loadTest) bridge(ctx context.Context, body []byte) (answer, error) {
	a, r, err := postDecoded[struct {
		ContextBridge *struct {
			Status string `json:"status"`
		} `json:"context_bridge"`
	}](ctx, lt, "/v1/bridge", body, "the bridge's answer")
	if err != nil {
		return answer{}, err
	}
	switch {
	case r.ContextBridge == nil:
		a.pack = "absent"
	case r.ContextBridge.Status == "degraded":
		a.pack = "degraded"
	default:
		a.pack = "ok"
	}
	return a, nil
}
