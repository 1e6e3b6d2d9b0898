//go:build !race

package ann_test

// raceEnabled: see race_on_test.go.
const raceEnabled = false
