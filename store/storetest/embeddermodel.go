package storetest

import (
	"bytes"
	"context"
	"testing"
)

// embedderModels is what a store keeps for the built-in learned embedder.
type embedderModels interface {
	EmbedderModel(ctx context.Context, kind string) (name string, model []byte, err error)
	EmbedderModelName(ctx context.Context, kind string) (string, error)
	PutEmbedderModel(ctx context.Context, kind, name string, model []byte) error
}

// testEmbedderModel checks that a saved embedder model survives a reopen
// byte for byte, that saving again replaces it, that a kind never saved
// reads as none, and that its name alone reads as the model's.
func (s *suite) testEmbedderModel(t *testing.T) {
	reopen := s.reopenable(t)
	st := reopen(t)
	ms, ok := st.(embedderModels)
	if !ok {
		t.Fatalf("%T keeps no embedder model (EmbedderModel, PutEmbedderModel): the learned embedder needs it", st)
	}
	ctx := t.Context()
	if name, data, err := ms.EmbedderModel(ctx, "learned"); err != nil || data != nil || name != "" {
		t.Fatalf("EmbedderModel of a new store = %q, %d bytes, %v; want none", name, len(data), err)
	}
	if name, err := ms.EmbedderModelName(ctx, "learned"); err != nil || name != "" {
		t.Fatalf("EmbedderModelName of a new store = %q, %v; want none", name, err)
	}
	first := bytes.Repeat([]byte{0, 1, 2, 255}, 100_000) // every byte value class, 400 kB
	second := []byte("second model")
	for _, m := range []struct {
		name string
		data []byte
	}{{"lsa-first", first}, {"lsa-second", second}} {
		if err := ms.PutEmbedderModel(ctx, "learned", m.name, m.data); err != nil {
			t.Fatalf("PutEmbedderModel(%s): %v", m.name, err)
		}
	}
	if err := ms.PutEmbedderModel(ctx, "other", "x", first); err != nil {
		t.Fatalf("PutEmbedderModel(other): %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ms = reopen(t).(embedderModels)
	tests := []struct {
		name, kind, wantName string
		want                 []byte
	}{
		{"replaced", "learned", "lsa-second", second},
		{"kinds apart", "other", "x", first},
		{"never saved", "absent", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name, data, err := ms.EmbedderModel(ctx, tt.kind)
			if err != nil {
				t.Fatal(err)
			}
			if name != tt.wantName || !bytes.Equal(data, tt.want) {
				t.Errorf("EmbedderModel(%s) = %q, %d bytes; want %q, %d bytes", tt.kind, name, len(data), tt.wantName, len(tt.want))
			}
			if name, err := ms.EmbedderModelName(ctx, tt.kind); err != nil || name != tt.wantName {
				t.Errorf("EmbedderModelName(%s) = %q, %v; want %q", tt.kind, name, err, tt.wantName)
			}
		})
	}
}
