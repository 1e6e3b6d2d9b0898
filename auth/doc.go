// Package auth answers "who is asking?" for the HTTP API: API keys read from
// a file that holds only their SHA-256 hashes, each mapped to a principal
// (the specialist the policy sees, the routes it may call, its rate limit),
// and a per-key rate limiter.
//
// The keys file (H4R_API_KEYS_FILE) is a JSON list:
//
//	[{"sha256": "<64 hex digits: SHA-256 of the key>",
//	  "principal": {"id": "playwright_healer", "type": "specialist",
//	                "securityLevel": "internal", "authorizedGroups": ["qa"]},
//	  "routes": ["read", "ingest", "admin"],
//	  "rateLimitPerMinute": 120}]
//
// The key itself never appears in the file, in logs or in metrics: a log
// names a key by KeyID, the first 12 hex digits of its hash.
package auth
