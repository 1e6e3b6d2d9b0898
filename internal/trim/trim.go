package trim

// Spare returns s, or a copy of it without its spare room when that room
// is more than a sixteenth of its length (nil for an empty s). The copy
// briefly holds the elements twice.
func Spare[S ~[]E, E any](s S) S {
	if 16*(cap(s)-len(s)) <= len(s) {
		return s
	}
	if len(s) == 0 {
		return nil
	}
	return append(make(S, 0, len(s)), s...)
}
