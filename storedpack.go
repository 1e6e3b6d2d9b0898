package h4r

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// Feedback verdicts (the retrieval contract's POST /feedback).
const (
	VerdictUseful  = "useful"
	VerdictPartial = "partial"
	VerdictWrong   = "wrong"
)

// MaxFeedbackNotesBytes caps a feedback's notes.
const MaxFeedbackNotesBytes = 8192

// StoredPack is a context pack as POST /query delivered it, kept so that
// feedback can name it (context_pack_id) and the tuner can read what was
// asked and what came back. It holds only what the caller was shown: the
// delivered result ids, never what policy denied.
type StoredPack struct {
	ID             string
	PrincipalID    string // the specialist the pack was built for
	Query          string // the query text, the tuner's query
	Request        []byte // the request as received (JSON)
	ResultIDs      []string
	PolicyRevision string
	CreatedAt      time.Time
}

// PackID is the stable id of a pack: the same request, results, policy
// revision, principal and time give the same id. It is a content hash, so
// a pack cannot be named without having been delivered it.
func PackID(principal string, request []byte, resultIDs []string, policyRevision string, at time.Time) string {
	h := sha256.New()
	write := func(s string) {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	write(principal)
	write(string(request))
	for _, id := range resultIDs {
		write(id)
	}
	write("\x01" + policyRevision)
	write(at.UTC().Format(time.RFC3339Nano))
	return "cp_" + hex.EncodeToString(h.Sum(nil))[:32]
}

// Feedback is a verdict on a stored pack. It copies the pack's query and
// result ids so that it stays a label after the pack itself has been
// pruned by the retention limit.
type Feedback struct {
	PackID      string
	PrincipalID string
	Verdict     string
	Notes       string
	Query       string
	ResultIDs   []string
	CreatedAt   time.Time
}
