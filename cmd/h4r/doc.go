// Command h4r is the H4R context engine: one binary with subcommands.
//
//	h4r serve [--addr HOST:PORT] [--data-dir DIR] [--demo]   run the HTTP API
//	h4r pack "query" [--specialist ID --level LEVEL --groups a,b] [--json]
//	h4r ingest FILE.jsonl|-                                  load items
//
// Configuration comes from the environment (see .env.example); flags
// override it.
package main
