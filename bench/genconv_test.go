package bench

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/h4r/h4r/analysis"
	"github.com/h4r/h4r/timeref"
)

// The conversation set's ground truth holds: every question is judged on
// turns of its own conversation, user turns; a multi-session question on
// two turns of different sessions; a knowledge update on the turn that
// changed the fact, in a later session than some earlier statement of the
// same topic; turns follow one another by links and in time.
func TestGenerateConversationsGroundTruth(t *testing.T) {
	dir := t.TempDir()
	const conversations = 6
	if err := GenerateConversations(dir, ConvOptions{Seed: 3, Conversations: conversations, Sessions: 4, Turns: 8}); err != nil {
		t.Fatal(err)
	}
	ds, err := LoadBEIR(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]Doc{}
	for i, d := range ds.Docs {
		byID[d.ID] = d
		if i > 0 && d.Scope == ds.Docs[i-1].Scope {
			prev := ds.Docs[i-1]
			if len(d.Links) != 1 || d.Links[0].Target != prev.ID || d.Links[0].Type != "follows" {
				t.Errorf("%s: links %+v, want one follows link to %s", d.ID, d.Links, prev.ID)
			}
			if !d.CreatedAt.After(prev.CreatedAt) {
				t.Errorf("%s is not later than %s", d.ID, prev.ID)
			}
		}
	}
	session := func(id string) string { return strings.Split(id, "-")[1] }
	perCat := map[string]int{}
	for _, q := range ds.Queries {
		perCat[q.Category]++
		var evidence []Doc
		for id, g := range ds.Qrels[q.ID] {
			d := byID[id]
			if g <= 0 || d.Scope != q.Scope || !strings.HasPrefix(d.Text, "user: ") {
				t.Errorf("%s: evidence %s (grade %d, scope %q, %q) is not a user turn of conversation %q", q.ID, id, g, d.Scope, d.Text, q.Scope)
			}
			evidence = append(evidence, d)
		}
		want := 1
		if q.Category == ConvMulti {
			want = 2
		}
		if len(evidence) != want {
			t.Fatalf("%s (%s): %d evidence turns, want %d", q.ID, q.Category, len(evidence), want)
		}
		switch q.Category {
		case ConvMulti:
			if session(evidence[0].ID) == session(evidence[1].ID) {
				t.Errorf("%s: both evidence turns in session %s", q.ID, session(evidence[0].ID))
			}
		case ConvUpdate:
			if !changedTurn(evidence[0].Text) {
				t.Errorf("%s: evidence %q is not a change of a fact", q.ID, evidence[0].Text)
			}
		case ConvPrevious:
			if changedTurn(evidence[0].Text) {
				t.Errorf("%s: evidence %q is the change, want the statement before it", q.ID, evidence[0].Text)
			}
		}
	}
	for _, c := range ConvCategories() {
		want := conversations
		if c == ConvSingle {
			want *= 2
		}
		if perCat[c] != want {
			t.Errorf("category %s has %d questions, want %d", c, perCat[c], want)
		}
	}
}

// changedTurn reports whether text is one of the topics' update turns.
func changedTurn(text string) bool {
	for _, t := range convTopics {
		if strings.HasPrefix(text, "user: "+strings.SplitN(t.update, "%s", 2)[0]) {
			return true
		}
	}
	return false
}

// The harder set's ground truth holds: one question per category and
// conversation, asked at a date; evidence on user turns of its own
// conversation; the multi-session question's two turns in two sessions;
// the temporal question's turn inside the time it names, counted from its
// date, and the other turns of its kind outside it; the knowledge update's
// turn later than the fact it changes; and every evidence turn sharing
// fewer of the question's words than some other turn of its session, so
// that text alone ranks the talk around the answer above it.
func TestGenerateHardConversationsGroundTruth(t *testing.T) {
	dir := t.TempDir()
	const conversations = 8
	if err := GenerateConversations(dir, ConvOptions{Seed: 5, Conversations: conversations, Turns: 8, Hard: true}); err != nil {
		t.Fatal(err)
	}
	ds, err := LoadBEIR(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]Doc{}
	bySession := map[string][]Doc{}
	for _, d := range ds.Docs {
		byID[d.ID] = d
		bySession[d.Session] = append(bySession[d.Session], d)
	}
	if n := len(bySession); n != conversations*hardSessions {
		t.Errorf("%d sessions, want %d", n, conversations*hardSessions)
	}
	shared := func(a, b string) int {
		words := map[string]bool{}
		for _, t := range analysis.Default().Terms(a) {
			words[t.Word] = true
		}
		n := 0
		for _, t := range analysis.Default().Terms(b) {
			if words[t.Word] {
				n++
			}
		}
		return n
	}
	perCat := map[string]int{}
	for _, q := range ds.Queries {
		perCat[q.Category]++
		if q.AsOf.IsZero() {
			t.Fatalf("%s has no date", q.ID)
		}
		var evidence []Doc
		for id := range ds.Qrels[q.ID] {
			d := byID[id]
			if d.Scope != q.Scope || !strings.HasPrefix(d.Text, "user: ") {
				t.Errorf("%s: evidence %s (%q) is not a user turn of %s", q.ID, id, d.Text, q.Scope)
			}
			evidence = append(evidence, d)
			best := 0
			for _, o := range bySession[d.Session] {
				if o.ID != d.ID {
					best = max(best, shared(q.Text, o.Text))
				}
			}
			if got := shared(q.Text, d.Text); got == 0 || got >= best {
				t.Errorf("%s: evidence %q shares %d words with %q, its session's best other turn %d; want at least one, and fewer", q.ID, d.Text, got, q.Text, best)
			}
		}
		switch q.Category {
		case ConvMulti:
			if len(evidence) != 2 || evidence[0].Session == evidence[1].Session {
				t.Errorf("%s: evidence %v, want two turns of two sessions", q.ID, evidence)
			}
		case ConvTemporal:
			w, ok := timeref.Find(q.Text, q.AsOf)
			if !ok || len(evidence) != 1 || !w.Contains(evidence[0].CreatedAt) {
				t.Fatalf("%s: %q names window %+v (%v), evidence %v", q.ID, q.Text, w, ok, evidence)
			}
			kind := strings.SplitN(evidence[0].Text, " ", 4)[:3]
			for _, d := range ds.Docs {
				if d.Scope == q.Scope && d.ID != evidence[0].ID && slices.Equal(strings.SplitN(d.Text, " ", 4)[:3], kind) && w.Contains(d.CreatedAt) {
					t.Errorf("%s: %s (%q) is of the same kind and inside the window too", q.ID, d.ID, d.Text)
				}
			}
		case ConvUpdate:
			if len(evidence) != 1 {
				t.Fatalf("%s: %d evidence turns", q.ID, len(evidence))
			}
			older := false
			for _, d := range ds.Docs {
				if d.Scope == q.Scope && d.CreatedAt.Before(evidence[0].CreatedAt) && d.Session != evidence[0].Session && hasFact(d.Text) {
					older = true
				}
			}
			if !older {
				t.Errorf("%s: no earlier fact before the update %q", q.ID, evidence[0].Text)
			}
		}
	}
	for _, c := range ConvHardCategories() {
		if perCat[c] != conversations {
			t.Errorf("category %s has %d questions, want %d", c, perCat[c], conversations)
		}
	}
	again := t.TempDir()
	if err := GenerateConversations(again, ConvOptions{Seed: 5, Conversations: conversations, Turns: 8, Hard: true}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"corpus.jsonl", "queries.jsonl", "qrels/test.tsv"} {
		a, _ := os.ReadFile(filepath.Join(dir, f))
		b, _ := os.ReadFile(filepath.Join(again, f))
		if len(a) == 0 || string(a) != string(b) {
			t.Errorf("%s differs between two runs with the same seed", f)
		}
	}
}

// hasFact reports whether text is one of the harder topics' first
// statements of a fact.
func hasFact(text string) bool {
	for _, t := range hardTopics {
		if strings.HasPrefix(text, "user: "+strings.SplitN(t.fact, "%s", 2)[0]) {
			return true
		}
	}
	return false
}
