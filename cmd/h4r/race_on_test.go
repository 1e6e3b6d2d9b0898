//go:build race

package main

// raceEnabled: the canary variants over selective item caches take minutes
// more under the race detector and pushed this package's race step toward
// its 30-minute timeout, so they skip under it; .ci/run runs them without
// -race in a step of their own.
const raceEnabled = true
