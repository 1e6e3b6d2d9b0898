// Package chunk cuts a file into chunks that respect its structure, each
// within a token budget counted with the same tiktoken encoding as packs:
//
//   - Markdown by heading (ATX "#" headings outside fenced code), each chunk
//     keeping its heading path ("Policy › Budgets");
//   - Go by top-level declaration, parsed with go/parser; a comment or blank
//     lines before a declaration belong to it, the package clause and imports
//     make one chunk;
//   - other code by a heuristic: a block starts at a line with no indentation
//     that follows a blank line and is not a closing bracket or "end" (so
//     Python defs, JavaScript functions, shell functions and Rust items start
//     blocks), and consecutive blocks are packed up to the budget;
//   - text by paragraph (blank-line separated), packed up to the budget, each
//     chunk starting with the previous chunk's last lines up to the overlap.
//
// A part still over the budget (a long function, a paragraph without blank
// lines) is cut by lines, and a single line over the budget by words. Every
// chunk records its 1-based, inclusive line range in the source, so that a
// citation can point at it. Contextual returns the indexed text: the raw
// chunk behind a line naming its repository, path and heading path or
// declaration, which helps full-text and vector search find a chunk whose
// own words do not name what it is about.
package chunk
