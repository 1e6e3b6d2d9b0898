package bench

import (
	"fmt"
	"time"
)

// ConvTemporal is the category of questions that name a time ("what did I
// cook two weeks ago"): the same kind of event happened in several
// sessions, and only the one of the named week is right.
const ConvTemporal = "temporal"

// ConvHardQuestions is how many questions each conversation of the harder
// set gets: one per category.
const ConvHardQuestions = 4

// ConvHardCategories lists the categories of the harder conversation set.
func ConvHardCategories() []string { return []string{ConvSingle, ConvUpdate, ConvMulti, ConvTemporal} }

// hardTopic is one thing a user talks about for a whole session. Theme
// lines share most of the question's words; the fact, the update and the
// event share one (the question paraphrases what was said), so that text
// alone ranks the talk around the answer above it, as in real
// conversations. Other lines are a distractor session on the same topic
// about someone else.
type hardTopic struct {
	theme, other           []string
	fact, update, distract string // with the value as %s
	event                  string // a dated event with the value as %s
	ask, askNow, askWhen   string // askWhen has the time as %s
}

var hardTopics = []hardTopic{
	{
		theme:    []string{"we took the puppy we adopted to the vet for her shots", "the puppy we adopted chews every shoe in the house", "training the puppy we adopted takes patience"},
		other:    []string{"my neighbour adopted a puppy and takes it to the vet", "the neighbour's adopted puppy chews shoes too"},
		fact:     "we settled on calling the puppy %s after all",
		update:   "the puppy answers to %s since we changed it",
		distract: "the neighbour's puppy got called %s",
		event:    "this morning we walked to %s park",
		ask:      "what is the name of the puppy we adopted", askNow: "what name does the puppy we adopted answer to now",
		askWhen: "which park did I walk the puppy we adopted to %s",
	},
	{
		theme:    []string{"the rent for our apartment building went up again this year", "our apartment building is close to the river", "the neighbours in our apartment building are friendly"},
		other:    []string{"my sister is looking for an apartment with a low rent", "my sister's apartment building has no lift"},
		fact:     "we ended up in %s in the end, a city up north",
		update:   "we packed everything and settled in %s, a quieter city",
		distract: "she wants a city like %s for the schools",
		event:    "on saturday we had dinner at %s close by",
		ask:      "which city is our apartment building in", askNow: "which city is our apartment building in now",
		askWhen: "where did we have dinner near our apartment building %s",
	},
	{
		theme:    []string{"my new job keeps me busy and the team is great", "my manager at the new job asked me to lead a project", "the commute to the new job is long"},
		other:    []string{"my cousin started a new job with a long commute", "my cousin's manager at the new job is strict"},
		fact:     "officially my role is %s, what I studied for",
		update:   "they promoted me, my role is %s as of this week",
		distract: "his role is %s, which he never studied",
		event:    "today I presented the %s report to everyone",
		ask:      "what is my role at the new job", askNow: "what is my role at the new job now",
		askWhen: "which report did I present at my new job %s",
	},
	{
		theme:    []string{"the car needs new tyres before winter", "I drive the car to work every morning", "the insurance for the car is too expensive"},
		other:    []string{"my brother bought a car and drives it to work", "my brother's car insurance is expensive too"},
		fact:     "mine is a %s model I got second hand",
		update:   "I traded it in, my model is a %s these days",
		distract: "his is a brand new %s model",
		event:    "I drove the car all the way to %s and back",
		ask:      "what model is the car I drive", askNow: "what model is the car I drive now",
		askWhen: "where did I drive the car %s",
	},
	{
		theme:    []string{"I love cooking the family dinner on fridays", "the family dinner on friday is a tradition with my parents", "cooking the family dinner relaxes me"},
		other:    []string{"my friend also loves cooking dinner for her family", "my friend's family dinner is on sundays"},
		fact:     "everyone always asks me for %s, my best dish",
		update:   "lately everybody wants %s, my best dish now",
		distract: "her best dish is %s",
		event:    "tonight I made %s for the family",
		ask:      "what do I cook best for the family dinner", askNow: "what do I cook best for the family dinner now",
		askWhen: "what did I cook for the family dinner %s",
	},
}

// weeksAgo words the times of temporal questions, indexed by weeks.
var weeksAgo = []string{"", "a week ago", "two weeks ago", "three weeks ago", "four weeks ago", "five weeks ago", "six weeks ago", "seven weeks ago", "eight weeks ago", "nine weeks ago", "ten weeks ago"}

// hardSessions is the number of sessions of a conversation of the harder
// set: one per session kind placed in conversationHard.
const hardSessions = 10

// conversationHard writes one conversation of the harder set: ten
// sessions a week apart, each about one topic. Single-session and
// multi-session questions paraphrase facts told in a session whose theme
// carries the question's words, beside a distractor session on the same
// topic about someone else; a knowledge update tells a fact, then changes
// it in a later session; a temporal question asks for the event of one of
// three weeks, each of which had the same kind of event.
func (g *generator) conversationHard(cid string, o ConvOptions) {
	topics := g.rng.Perm(len(hardTopics))
	single, multi, update, temporal := hardTopics[topics[0]], hardTopics[topics[1]], hardTopics[topics[2]], hardTopics[topics[3]]
	type session struct {
		lines []string // the user's lines besides the special one
		turn  string   // the special user turn: a fact, an update, an event
		evid  *string  // where the special turn's id goes, when it is evidence
	}
	var singleFact, multiFact, updateNew string // evidence ids
	eventIDs := make([]string, 3)
	sessions := []session{
		{lines: single.theme, turn: fmt.Sprintf(single.fact, g.word()), evid: &singleFact},
		{lines: single.other, turn: fmt.Sprintf(single.distract, g.word())},
		{lines: multi.theme, turn: fmt.Sprintf(multi.fact, g.word()), evid: &multiFact},
		{lines: multi.other, turn: fmt.Sprintf(multi.distract, g.word())},
		{lines: update.theme, turn: fmt.Sprintf(update.fact, g.word())},
		{lines: update.theme, turn: fmt.Sprintf(update.update, g.word()), evid: &updateNew},
		{lines: update.other, turn: fmt.Sprintf(update.distract, g.word())},
	}
	for i := range eventIDs {
		sessions = append(sessions, session{lines: temporal.theme, turn: fmt.Sprintf(temporal.event, g.word()), evid: &eventIDs[i]})
	}
	// Order: a random permutation, except that the update comes after the
	// fact it changes (sessions 4 and 5).
	order := g.rng.Perm(len(sessions))
	pos := make([]int, len(sessions))
	for p, s := range order {
		pos[s] = p
	}
	if pos[4] > pos[5] {
		order[pos[4]], order[pos[5]] = 5, 4
	}
	prev := ""
	for p, si := range order {
		s := sessions[si]
		start := o.Now.Add(-time.Duration(len(sessions)-p) * 7 * 24 * time.Hour)
		special := 2 * g.rng.IntN(o.Turns/2)
		line := 0
		for t := range o.Turns {
			id := fmt.Sprintf("%s-s%d-t%02d", cid, p+1, t+1)
			var text string
			switch {
			case t == special:
				text = "user: " + s.turn
				if s.evid != nil {
					*s.evid = id
				}
			case t%2 == 1:
				text = "assistant: " + g.assistantLine()
			default:
				text = "user: " + s.lines[line%len(s.lines)]
				line++
			}
			d := genDoc{ID: id, Text: text, Scope: cid, Session: fmt.Sprintf("%s-s%d", cid, p+1),
				CreatedAt:  start.Add(time.Duration(t) * 2 * time.Minute).Format(time.RFC3339),
				Importance: 0.5, Trust: 0.7, Sensitivity: 0.1, Novelty: 0.2}
			if prev != "" {
				d.Links = []genLink{{Target: prev, Type: "follows"}}
			}
			g.docs = append(g.docs, d)
			prev = id
		}
	}
	// The temporal question asks for one of the three events, by how many
	// weeks before the question its session was.
	which := g.rng.IntN(len(eventIDs))
	weeks := 0
	for p, si := range order {
		if si == 7+which {
			weeks = len(sessions) - p
		}
	}
	qs := []struct {
		text, category string
		evidence       []string
	}{
		{single.ask, ConvSingle, []string{singleFact}},
		{update.askNow, ConvUpdate, []string{updateNew}},
		{single.ask + " and " + multi.ask, ConvMulti, []string{singleFact, multiFact}},
		{fmt.Sprintf(temporal.askWhen, weeksAgo[weeks]), ConvTemporal, []string{eventIDs[which]}},
	}
	for i, q := range qs {
		qid := fmt.Sprintf("%s-q%d", cid, i+1)
		g.qs = append(g.qs, genQuery{ID: qid, Text: q.text, Scope: cid, Category: q.category, Date: o.Now.Format(time.RFC3339)})
		for _, id := range q.evidence {
			g.qrels = append(g.qrels, genJudgment{qid, id, 1})
		}
	}
}
