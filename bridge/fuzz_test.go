package bridge_test

import (
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/bridge"
)

// FuzzDecodeTrajectories: any body is decoded into valid trajectories or
// refused with an invalid_argument error, never a panic.
func FuzzDecodeTrajectories(f *testing.F) {
	for _, s := range []string{
		`{"trajectory_id": "t", "description": "d", "success_score": 0.5, "quality_score": 1}`,
		`{"trajectories": [{"trajectory_id": "t", "description": "d", "tool_sequence": ["think"]}]}`,
		`{"trajectories": []}`, `{"trajectory_id": "", "description": "d"}`, `[]`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ts, err := bridge.DecodeTrajectories(body)
		if err != nil {
			if h4r.ErrorCode(err) != h4r.EINVALID {
				t.Fatalf("%v (code %s)", err, h4r.ErrorCode(err))
			}
			return
		}
		for _, tr := range ts {
			it := tr.Item()
			if it.Kind != bridge.KindTrajectory || it.ID == "" {
				t.Fatalf("item %+v", it)
			}
			_ = bridge.ExtractSignature("think", map[string]any{"content": tr.Description}, bridge.TechExtractor{})
		}
	})
}
