// Package conversation turns what surrounds a hit in a conversation into
// evidence for the ranking: the session a turn belongs to, the turns next
// to it, and the time the question names.
//
// A memory of a conversation is a sequence of turns, each an item of its
// own, grouped in sessions (metadata.session) and chained in order by
// turn-order links (follows). A question rarely repeats the words of every
// turn that answers it: the user's turn states the fact, the assistant's
// reply after it elaborates in other words, and a session is about one
// thing. So a turn whose session matches the question well is more likely
// relevant than its own words say, and the turns around a strong hit are
// context a reader needs.
//
// Two evidence sources come out of here, fused into relevance by the
// ranker like any text generator, with weights of their own:
//
//   - session: a session scores its density, the share of it that matches
//     the question (its turns' text scores, each over the best hit's, summed
//     over its number of turns). A text hit in a session scores the greater
//     of its own text score and its session's, and the turns of the best
//     sessions that no text generator found (reached by turn-order links)
//     join the candidates at their session's score. Items outside any
//     session score their own text score, so that mixing conversations
//     with documents does not penalise the documents. A pack whose
//     candidates have no session gets no session evidence at all: ranking
//     over sessionless items is unchanged.
//   - time: when the question names a time ("two weeks ago", "last May"),
//     relative to when it is asked, candidates made inside that window
//     score 1 and those outside less the farther they are.
package conversation
