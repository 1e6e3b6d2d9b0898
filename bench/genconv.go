package bench

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Conversation question categories (h4r bench gen --kind conversation).
const (
	ConvSingle   = "single-session"   // a fact stated in one turn
	ConvUpdate   = "knowledge-update" // a fact stated, then changed in a later session: only the change is right
	ConvMulti    = "multi-session"    // two facts from two sessions, both needed
	ConvPrevious = "previous-value"   // asked what it was before the change: the first statement is right
)

// ConvQuestions is how many questions each conversation gets.
const ConvQuestions = 5

// ConvCategories lists the conversation categories.
func ConvCategories() []string { return []string{ConvSingle, ConvUpdate, ConvMulti, ConvPrevious} }

// ConvOptions configure GenerateConversations.
type ConvOptions struct {
	Seed          uint64
	Conversations int
	Sessions      int       // sessions per conversation (at least 3)
	Turns         int       // turns per session (at least 6)
	Now           time.Time // the dataset's clock: the last session ends a day before
	// Hard writes the harder set (ConvHardCategories): paraphrased
	// questions, distractor sessions on the same topics, knowledge updates
	// and temporal questions, ten sessions per conversation.
	Hard bool
}

// convTopic is one thing a user tells about themself: how it is said, how
// a change is said, what a distractor turn says, and how it is asked.
type convTopic struct {
	state, update, distract, ask, askBefore string
}

// convTopics share question words with their statements, as real
// questions do, and their distractors share some of them too.
var convTopics = []convTopic{
	{"we adopted a dog last month, her name is %s", "we renamed the dog, she is called %s now", "the neighbour's dog barked at the mailman all night", "what is my dog's name", "what was my dog's name before we renamed her"},
	{"I live in %s at the moment, close to the river", "I just moved, I live in %s now", "my friend wants to live in a city by the sea", "which city do I live in", "which city did I live in before I moved"},
	{"I work as a %s at a small company", "I changed jobs, now I work as a %s", "my brother hates his work at the bank", "what do I work as", "what did I work as before I changed jobs"},
	{"I drive an old %s car to work", "I sold the old car and now drive a %s", "the car in front of me stalled in traffic today", "what car do I drive", "what car did I drive before I sold it"},
	{"on weekends I practise %s with friends", "I gave up my old hobby, on weekends I practise %s now", "weekends are busy with friends and family", "what do I practise on weekends", "what did I practise on weekends before"},
	{"my sister %s is visiting us next week", "my sister goes by %s now, she changed her name", "my colleague's sister is visiting too", "what is my sister's name", "what was my sister's name before she changed it"},
	{"my favourite dish is %s, I cook it every friday", "I cook something new now, my favourite dish is %s these days", "the restaurant dish was too salty", "what is my favourite dish", "what was my favourite dish before"},
}

// GenerateConversations writes a conversation-memory dataset in BEIR
// layout to dir: per conversation, sessions a week apart of alternating
// user and assistant turns (each turn an item, dated, linked to the turn
// before it by "follows", scoped to its conversation), facts told in
// some turns and changed in later ones, and questions whose evidence is
// one or two turns. The same options always write the same bytes.
func GenerateConversations(dir string, o ConvOptions) error {
	if o.Conversations <= 0 {
		return fmt.Errorf("gen: conversations must be positive, got %d", o.Conversations)
	}
	o.Sessions, o.Turns = max(o.Sessions, 3), max(o.Turns, 6)
	if o.Now.IsZero() {
		o.Now = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	}
	g := &generator{rng: rand.New(rand.NewPCG(o.Seed, 0x636f6e76)), opts: GenOptions{Seed: o.Seed, Now: o.Now}, used: map[string]bool{}}
	for c := range o.Conversations {
		if o.Hard {
			g.conversationHard(fmt.Sprintf("c%03d", c+1), o)
		} else {
			g.conversation(fmt.Sprintf("c%03d", c+1), o)
		}
	}
	m := GenMapping(o.Now)
	m.LinkType, m.Session, m.QueryDate = "follows", "session", "date"
	return g.write(dir, m)
}

// convFact is a turn to place: its text, the earliest and latest session
// it may be in, and who judges it.
type convFact struct {
	text           string
	first, last    int
	session, index int // where it was placed
	id             string
}

func (g *generator) conversation(cid string, o ConvOptions) {
	topics := g.rng.Perm(len(convTopics))
	var facts []*convFact
	add := func(text string, first, last int) *convFact {
		f := &convFact{text: text, first: first, last: last}
		facts = append(facts, f)
		return f
	}
	type question struct {
		text, category string
		evidence       []*convFact
	}
	var qs []question
	mid := o.Sessions / 2
	// topics[0], topics[1]: told once; topics[2]: changed later, asked now;
	// topics[3]: changed later, asked before; topics[4] and topics[5]:
	// told in different sessions, asked together.
	for _, i := range topics[:2] {
		t := convTopics[i]
		f := add(fmt.Sprintf(t.state, g.word()), 0, o.Sessions-1)
		qs = append(qs, question{t.ask, ConvSingle, []*convFact{f}})
	}
	for k, i := range topics[2:4] {
		t := convTopics[i]
		old := add(fmt.Sprintf(t.state, g.word()), 0, mid-1)
		changed := add(fmt.Sprintf(t.update, g.word()), mid, o.Sessions-1)
		if k == 0 {
			qs = append(qs, question{t.ask, ConvUpdate, []*convFact{changed}})
		} else {
			qs = append(qs, question{t.askBefore, ConvPrevious, []*convFact{old}})
		}
	}
	a, b := convTopics[topics[4]], convTopics[topics[5]]
	fa := add(fmt.Sprintf(a.state, g.word()), 0, mid-1)
	fb := add(fmt.Sprintf(b.state, g.word()), mid, o.Sessions-1)
	qs = append(qs, question{a.ask + " and " + b.ask, ConvMulti, []*convFact{fa, fb}})

	// Place the facts on user turns (even indexes) of their sessions.
	taken := map[[2]int]bool{}
	for _, f := range facts {
		for {
			s := f.first + g.rng.IntN(f.last-f.first+1)
			t := 2 * g.rng.IntN(o.Turns/2)
			if !taken[[2]int{s, t}] {
				taken[[2]int{s, t}] = true
				f.session, f.index = s, t
				break
			}
		}
	}
	at := map[[2]int]*convFact{}
	for _, f := range facts {
		at[[2]int{f.session, f.index}] = f
	}
	prev := ""
	for s := range o.Sessions {
		start := o.Now.Add(-time.Duration(o.Sessions-s) * 7 * 24 * time.Hour)
		for t := range o.Turns {
			id := fmt.Sprintf("%s-s%d-t%02d", cid, s+1, t+1)
			var text string
			switch f := at[[2]int{s, t}]; {
			case f != nil:
				text, f.id = "user: "+f.text, id
			case t%2 == 1:
				text = "assistant: " + g.assistantLine()
			case g.rng.IntN(3) == 0:
				text = "user: " + convTopics[g.rng.IntN(len(convTopics))].distract
			default:
				text = "user: " + g.filler(6) + " " + g.word()
			}
			d := genDoc{ID: id, Text: text, Scope: cid, Session: fmt.Sprintf("%s-s%d", cid, s+1),
				CreatedAt:  start.Add(time.Duration(t) * 2 * time.Minute).Format(time.RFC3339),
				Importance: 0.5, Trust: 0.7, Sensitivity: 0.1, Novelty: 0.2}
			if prev != "" {
				d.Links = []genLink{{Target: prev, Type: "follows"}}
			}
			g.docs = append(g.docs, d)
			prev = id
		}
	}
	for i, q := range qs {
		qid := fmt.Sprintf("%s-q%d", cid, i+1)
		g.qs = append(g.qs, genQuery{ID: qid, Text: q.text, Scope: cid, Category: q.category, Date: o.Now.Format(time.RFC3339)})
		for _, f := range q.evidence {
			g.qrels = append(g.qrels, genJudgment{qid, f.id, 1})
		}
	}
}

// assistantLine is a reply that shares common words with everything and
// no fact with anything.
func (g *generator) assistantLine() string {
	replies := []string{"that sounds good, tell me more", "thanks for sharing, how do you feel about it", "I see, what happened next", "noted, anything else on your mind"}
	return replies[g.rng.IntN(len(replies))] + " " + g.filler(3)
}
