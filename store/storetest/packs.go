package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/h4r/h4r"
)

// PackStore is what a store keeps for POST /query and POST /feedback:
// delivered packs under a retention limit, and verdicts on them.
type PackStore interface {
	SavePack(ctx context.Context, p h4r.StoredPack, keep int) error
	Pack(ctx context.Context, id string) (*h4r.StoredPack, error)
	AddFeedback(ctx context.Context, f h4r.Feedback) error
	EachFeedback(ctx context.Context, fn func(h4r.Feedback) error) error
	PacksOf(ctx context.Context, principal string, limit, offset int) ([]h4r.StoredPack, int, error)
	FeedbackOn(ctx context.Context, packID string) ([]h4r.Feedback, error)
}

// RunPacks runs the stored-pack contract against the stores open returns
// (each new and empty, closed by t.Cleanup).
func RunPacks(t *testing.T, open func(t *testing.T) PackStore) {
	// Microseconds: what Postgres keeps of a time.
	at := time.Date(2026, 11, 24, 12, 0, 0, 123456000, time.UTC)
	pack := func(i int) h4r.StoredPack {
		ids := []string{fmt.Sprintf("item-%d", i), "shared"}
		req := []byte(fmt.Sprintf(`{"query":"q%d"}`, i))
		return h4r.StoredPack{
			ID: h4r.PackID("alice", req, ids, "rev1", at.Add(time.Duration(i)*time.Second)), PrincipalID: "alice",
			Query: fmt.Sprintf("q%d", i), Request: req, ResultIDs: ids, PolicyRevision: "rev1",
			CreatedAt: at.Add(time.Duration(i) * time.Second),
		}
	}
	t.Run("round_trip", func(t *testing.T) {
		st := open(t)
		p := pack(1)
		if err := st.SavePack(t.Context(), p, 0); err != nil {
			t.Fatal(err)
		}
		if err := st.SavePack(t.Context(), p, 0); err != nil {
			t.Fatalf("saving the same pack twice: %v", err)
		}
		got, err := st.Pack(t.Context(), p.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != p.ID || got.PrincipalID != "alice" || got.Query != "q1" || got.PolicyRevision != "rev1" ||
			!slices.Equal(got.ResultIDs, p.ResultIDs) || !got.CreatedAt.Equal(p.CreatedAt) {
			t.Errorf("Pack = %+v, want %+v", got, p)
		}
		if string(got.Request) != string(p.Request) {
			t.Errorf("Request = %s", got.Request)
		}
	})
	t.Run("unknown_is_not_found", func(t *testing.T) {
		st := open(t)
		_, err := st.Pack(t.Context(), "cp_nope")
		if h4r.ErrorCode(err) != h4r.ENOTFOUND {
			t.Fatalf("Pack(unknown) = %v, want not_found", err)
		}
	})
	t.Run("retention_keeps_the_newest", func(t *testing.T) {
		st := open(t)
		for i := range 5 {
			if err := st.SavePack(t.Context(), pack(i), 3); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 5 {
			_, err := st.Pack(t.Context(), pack(i).ID)
			if kept := i >= 2; kept != (err == nil) {
				t.Errorf("pack %d: kept=%v, Pack err=%v", i, kept, err)
			}
		}
	})
	t.Run("feedback_outlives_its_pack", func(t *testing.T) {
		st := open(t)
		p := pack(7)
		if err := st.SavePack(t.Context(), p, 1); err != nil {
			t.Fatal(err)
		}
		fb := []h4r.Feedback{
			{PackID: p.ID, PrincipalID: "alice", Verdict: h4r.VerdictUseful, Notes: "ok", Query: p.Query, ResultIDs: p.ResultIDs, CreatedAt: at},
			{PackID: p.ID, PrincipalID: "alice", Verdict: h4r.VerdictWrong, Query: p.Query, ResultIDs: p.ResultIDs, CreatedAt: at.Add(time.Minute)},
		}
		for _, f := range fb {
			if err := st.AddFeedback(t.Context(), f); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.SavePack(t.Context(), pack(8), 1); err != nil { // prunes pack 7
			t.Fatal(err)
		}
		if _, err := st.Pack(t.Context(), p.ID); h4r.ErrorCode(err) != h4r.ENOTFOUND {
			t.Fatalf("pack 7 after retention: %v, want not_found", err)
		}
		var got []h4r.Feedback
		if err := st.EachFeedback(t.Context(), func(f h4r.Feedback) error { got = append(got, f); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].Verdict != h4r.VerdictUseful || got[1].Verdict != h4r.VerdictWrong ||
			got[0].Notes != "ok" || !slices.Equal(got[0].ResultIDs, p.ResultIDs) || got[0].Query != "q7" || !got[1].CreatedAt.Equal(at.Add(time.Minute)) {
			t.Errorf("EachFeedback = %+v", got)
		}
	})
	t.Run("packs_of_a_principal_newest_first", func(t *testing.T) {
		st := open(t)
		for i := range 4 {
			if err := st.SavePack(t.Context(), pack(i), 0); err != nil {
				t.Fatal(err)
			}
		}
		other := pack(9)
		other.PrincipalID, other.ID = "bob", "cp_bob"
		if err := st.SavePack(t.Context(), other, 0); err != nil {
			t.Fatal(err)
		}
		got, total, err := st.PacksOf(t.Context(), "alice", 2, 1)
		if err != nil {
			t.Fatal(err)
		}
		if total != 4 || len(got) != 2 || got[0].ID != pack(2).ID || got[1].ID != pack(1).ID ||
			got[0].Query != "q2" || !slices.Equal(got[0].ResultIDs, pack(2).ResultIDs) || !got[0].CreatedAt.Equal(pack(2).CreatedAt) {
			t.Errorf("PacksOf(alice, 2, 1) = %d, %+v; want 4 and packs 2 and 1", total, got)
		}
		if got, total, err := st.PacksOf(t.Context(), "carol", 10, 0); err != nil || total != 0 || len(got) != 0 {
			t.Errorf("PacksOf(carol) = %d, %+v, %v; want none", total, got, err)
		}
		if err := st.AddFeedback(t.Context(), h4r.Feedback{PackID: pack(1).ID, PrincipalID: "alice", Verdict: h4r.VerdictPartial, Notes: "n", Query: "q1", ResultIDs: pack(1).ResultIDs, CreatedAt: at}); err != nil {
			t.Fatal(err)
		}
		fb, err := st.FeedbackOn(t.Context(), pack(1).ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(fb) != 1 || fb[0].Verdict != h4r.VerdictPartial || fb[0].Notes != "n" || !fb[0].CreatedAt.Equal(at) {
			t.Errorf("FeedbackOn(pack 1) = %+v", fb)
		}
		if fb, err := st.FeedbackOn(t.Context(), pack(2).ID); err != nil || len(fb) != 0 {
			t.Errorf("FeedbackOn(pack 2) = %+v, %v; want none", fb, err)
		}
	})
	t.Run("bad_verdict_is_refused_by_the_schema", func(t *testing.T) {
		st := open(t)
		err := st.AddFeedback(t.Context(), h4r.Feedback{PackID: "x", Verdict: "great", CreatedAt: at})
		if err == nil {
			t.Fatal("AddFeedback(verdict great) succeeded")
		}
	})
}
