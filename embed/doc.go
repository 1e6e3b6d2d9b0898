// Package embed turns text into vectors for semantic candidates, and finds
// candidates by them.
//
// Three embedders implement Embedder:
//
//   - Learned, the built-in default: latent semantic analysis of the
//     corpus itself. Learn reads the indexed texts, weighs each term of each
//     text by sublinear term frequency times idf (stop words, and terms in
//     fewer than two or more than half of the texts, left out), and keeps
//     the leading left singular vectors of that term–text matrix, found by
//     a randomised range finder with power iterations on A·Aᵀ (one pass
//     over the texts per product, no dense matrix of the corpus). A term's
//     vector is its row; a text's vector is the tf-idf-weighted sum of its
//     terms' rows, normalised, so a query costs a few additions per word.
//     Terms that occur in the same texts, or in texts that share other
//     terms, end up close: "car" and "automobile" meet when both sit
//     beside "engine" and "wheel". The model is named by its dimension and
//     a digest, so vectors of two learnings never mix, and it is saved
//     (Encode, Decode) in the store that holds the vectors.
//   - Hash: deterministic feature hashing of
//     normalised word unigrams, word bigrams and character n-grams into a
//     fixed dimension, L2-normalised. It needs no model and no network.
//     Because words share character n-grams, morphological variants
//     ("optimize", "optimization", "optimizer") land close together, and
//     texts sharing a phrase share its bigram. It knows nothing of meaning:
//     synonyms that share no letters ("car", "automobile") and paraphrases
//     score as unrelated, and it has no notion of which words are rare (no
//     IDF) beyond a short stop-word list. It is a cheap fuzzy-lexical
//     signal that complements bm25, not a language model.
//   - OpenAI, a client of any OpenAI-compatible /v1/embeddings server
//     (OpenAI, Ollama, vLLM, text-embeddings-inference), with batching, a
//     per-call deadline and retries with backoff on 429 and 5xx.
//
// Cache keeps query embeddings in an LRU keyed by model and normalised text.
// Generator is the "vector" candidate generator: it embeds the query under
// its own deadline and asks an Index (the SQLite store's exact search, or
// Qdrant) for the nearest items; when the embedding fails or is late it
// answers from its fallback (full-text search) with a warning, so a request
// never fails for want of a vector.
package embed
