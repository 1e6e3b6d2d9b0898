package bench

import (
	"strings"
	"testing"
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
