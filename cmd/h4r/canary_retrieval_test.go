package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// The canaries of the retrieval features that read more than a pack's own
// candidates: a conversation session whose turns the probes see but for a
// restricted, a redacted and a deleted one (the session walk and its
// evidence), and facts superseded by items the probes may not see (a
// restricted superseder, a withheld newest statement of a subject, a
// deleted superseder). An item whose id a pack could name without its
// text (a superseder) carries its marker in its id, so that naming it is
// a marker byte. The packs are also asked with pseudo-relevance feedback
// (canaryPackBodies), whose words come from the top hits.

// seedRetrieval writes the session and the supersession canaries.
func (h *harness) seedRetrieval(mark func(kind, class, what string) string) {
	t, w := h.t, h.writer.base
	r, p, d := mark("session", classRestricted, "a turn of a session whose other turns are open"), mark("session", classRedacted, "a PII turn of the session"), mark("session", classDeleted, "a deleted turn of the session")
	turn := func(id, text, follows, meta string) string {
		link := ""
		if follows != "" {
			link = `, "links": [{"type": "follows", "target": "` + follows + `", "strength": 1}]`
		}
		return fmt.Sprintf(`{"id": %q, "kind": "turn", "text": %q, "metadata": {"trust": 0.9, "session": "cnry-session", "createdAt": "2026-11-20T12:0%d:00Z"%s}%s}`,
			id, text, len(h.sessionTurns), meta, link)
	}
	var turns []string
	for _, tn := range []struct{ id, text, meta string }{
		{"cnry-turn-1", "user: the " + topic + " session opens", ""},
		{"cnry-turn-r", "user: the " + topic + " turn " + r, `, "sensitivity": 0.95, "restrictedToGroups": ["vault"]`},
		{"cnry-turn-p", "user: the " + topic + " turn of " + p, `, "containsPII": true`},
		{"cnry-turn-2", "assistant: the " + topic + " session goes on", ""},
		{"cnry-turn-d", "user: the " + topic + " turn " + d + ", deleted", ""},
		{"cnry-turn-3", "assistant: the session closes", ""},
	} {
		prev := ""
		if n := len(h.sessionTurns); n > 0 {
			prev = h.sessionTurns[n-1]
		}
		turns = append(turns, turn(tn.id, tn.text, prev, tn.meta))
		h.sessionTurns = append(h.sessionTurns, tn.id)
	}
	mustCall(t, w, keySeeder, "POST", "/v1/items", `{"items": [`+strings.Join(turns, ", ")+`]}`, http.StatusOK)
	h.itemIDs = append(h.itemIDs, "cnry-turn-r", "cnry-turn-p", "cnry-turn-d")
	h.hide("cnry-turn-r", r)
	h.hide("cnry-turn-d", d)
	h.deleteIDs = append(h.deleteIDs, "cnry-turn-d")

	// Supersession: three open facts, each superseded by an item the
	// probes may not see, whose id holds its marker.
	r = mark("supersede", classRestricted, "the id of a restricted item superseding an open one (supersedes link)")
	wd := mark("supersede", classRedacted, "the id of a withheld item, the newest statement of an open item's subject")
	d = mark("supersede", classDeleted, "the id of a deleted item superseding an open one (supersedes link)")
	supR, subjW, supD := "cnry-sup-"+r, "cnry-subj-"+wd, "cnry-sup-"+d
	fact := func(id, text, at, meta, supersedes string) string {
		link := ""
		if supersedes != "" {
			link = `, "links": [{"type": "supersedes", "target": "` + supersedes + `"}]`
		}
		return fmt.Sprintf(`{"id": %q, "kind": "note", "text": %q, "metadata": {"trust": 0.9, "importance": 0.9, "createdAt": %q%s}%s}`, id, text, at, meta, link)
	}
	mustCall(t, w, keySeeder, "POST", "/v1/items", `{"items": [`+strings.Join([]string{
		fact("cnry-fact-1", "The "+topic+" fact as first stated.", "2026-11-01T12:00:00Z", "", ""),
		fact("cnry-fact-2", "The "+topic+" subject as first stated.", "2026-11-01T12:00:00Z", `, "subject": "cnry-subject"`, ""),
		fact("cnry-fact-3", "The "+topic+" fact stated once more.", "2026-11-01T12:00:00Z", "", ""),
	}, ", ")+`]}`, http.StatusOK)
	mustCall(t, w, keySeeder, "POST", "/v1/items", `{"items": [`+strings.Join([]string{
		fact(supR, "The "+topic+" fact restated.", "2026-11-10T12:00:00Z", `, "sensitivity": 0.95, "restrictedToGroups": ["vault"]`, "cnry-fact-1"),
		fact(subjW, "The "+topic+" subject restated.", "2026-11-10T12:00:00Z", `, "subject": "cnry-subject", "hasCredentials": true`, ""),
		fact(supD, "The "+topic+" fact restated, deleted.", "2026-11-10T12:00:00Z", "", "cnry-fact-3"),
	}, ", ")+`]}`, http.StatusOK)
	h.markedIDs = append(h.markedIDs, supR, subjW, supD)
	for i := range h.det.canaries {
		if h.det.canaries[i].kind == "supersede" {
			h.det.canaries[i].markedID = true
		}
	}
	h.deleteIDs = append(h.deleteIDs, supD)
}

// retrievalControls prove the retrieval canaries would be seen: the
// vault key, which may see the restricted superseder, is told that it
// supersedes the open fact (so a probe told so would be a finding), and
// the seeder reads each marked id.
func (h *harness) retrievalControls() {
	t := h.t
	b := call(h.writer.base, keyVault, "POST", "/v1/context-pack", `{"query": {"type": "keyword", "text": "`+topic+` fact"}, "limit": 50}`).body
	if !bytes.Contains(b, []byte(`"superseded_by":"`+h.markedIDs[0]+`"`)) {
		t.Errorf("control: the vault key is not told that %s supersedes cnry-fact-1, so its absence elsewhere proves nothing: %.600s", h.markedIDs[0], b)
	}
	for _, id := range h.markedIDs {
		if r := call(h.writer.base, keySeeder, "GET", "/v1/items/"+url.PathEscape(id), nil); r.status != http.StatusOK {
			t.Errorf("control: the marked item %s was not stored: %d %.300s", id, r.status, r.body)
		}
	}
}
