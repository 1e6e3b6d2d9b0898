// Package sqlkit is what the two SQL stores (store/sqlite and
// store/postgres) do alike, apart from their SQL:
//
//   - access counts: StartAccessTracker batches the counts of delivered
//     items in memory and a background loop writes them in one transaction
//     per interval, so that serving a pack never waits on a write;
//   - columns: MaintainedColumn names the column a store-maintained
//     metadata key is kept in, so that a filter reads the same column in
//     both;
//   - embedding: Embed checks an embedder's answer, EmbedItems embeds
//     items, and the re-embedding walks are written once: EmbedAll embeds
//     every item in batches of VectorBatch, EmbedMissing pages through the
//     items without a vector of the model (a store's MissingBatch reads a
//     page in its dialect, its VectorWriter writes the vectors);
//   - vector hits: Hydrate turns ranked vectors into hits, the items read
//     in the store's own read and those deleted meanwhile left out;
//   - migrations: LoadMigrations reads and orders the numbered schema
//     migrations a store embeds (NNNN_what.sql); each store applies them
//     its own way;
//   - stored packs: the values a row is written with (PackRequest, PackIDs),
//     the error of a pack that is not there (PackNotFound) and the visit of
//     verdicts read whole (VisitFeedback);
//   - supersedes checks: SupersedesProblem runs a store's two checks of a
//     batch's supersedes links (a missing target, then a cycle) through a
//     SupersedesRow that queries in the store's dialect, and
//     CheckSupersedes turns the first refused link into the batch's error;
//   - token recounts when the configured encoding changes (RecountBatch,
//     RecountTokens);
//   - write deadlines: WriteWithin bounds a write that waits for the
//     store's one writer behind every write before it, and turns a write
//     the deadline ended into an unavailable *h4r.Error (503 with
//     Retry-After); the stores roll such a write back.
package sqlkit
