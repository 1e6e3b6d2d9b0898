package rag_test

import (
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/rag"
)

// FuzzDecode: any body is decoded or refused with an invalid_argument
// *h4r.Error naming a field, never a panic, and what is accepted plans.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"session_id": "s", "agent_id": "a", "query": "q", "k": 3, "git": {"changed_files": ["a.go"]}}`,
		`{"session_id": "s", "agent_id": "a", "query": "q", "k": -1}`,
		`{"context_pack_id": "cp_1", "verdict": "useful", "notes": "n"}`,
		`{"context_pack_id": "", "verdict": "nope"}`,
		`[]`, `null`, `{"query": 1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		q, err := rag.DecodeQuery(body)
		if err != nil {
			if h4r.ErrorCode(err) != h4r.EINVALID {
				t.Fatalf("DecodeQuery: %v (code %s)", err, h4r.ErrorCode(err))
			}
		} else if _, err := q.Plan(); err != nil {
			t.Fatalf("a valid query does not plan: %v", err)
		}
		if _, err := rag.DecodeFeedback(body); err != nil && h4r.ErrorCode(err) != h4r.EINVALID {
			t.Fatalf("DecodeFeedback: %v (code %s)", err, h4r.ErrorCode(err))
		}
	})
}
