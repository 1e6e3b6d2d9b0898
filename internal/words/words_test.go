package words

import (
	"slices"
	"strings"
	"testing"
)

// reference is what Lower must equal.
func reference(s string) []string { return strings.FieldsFunc(strings.ToLower(s), notWord) }

func TestLowerEqualsFieldsOfLowered(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"empty", "", []string{}},
		{"separators only", " .,;-_/ ", []string{}},
		{"lower-case ASCII", "the deploy failed", []string{"the", "deploy", "failed"}},
		{"upper-case ASCII", "Deploy FAILED on Staging-2", []string{"deploy", "failed", "on", "staging", "2"}},
		{"digits and underscores", "v4_2 build#118", []string{"v4", "2", "build", "118"}},
		{"a word at each end", "x.y", []string{"x", "y"}},
		{"accented letters", "Café RÉSUMÉ", []string{"café", "résumé"}},
		{"a capital dotted I", "İstanbul", reference("İstanbul")},
		{"CJK and punctuation", "日本語、テスト。", []string{"日本語", "テスト"}},
		{"invalid UTF-8", "ab\xffcd", reference("ab\xffcd")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Lower(tt.in)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Lower(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if ref := reference(tt.in); !slices.Equal(got, ref) {
				t.Errorf("Lower(%q) = %q, FieldsFunc of the lowered text gives %q", tt.in, got, ref)
			}
		})
	}
}

// FuzzLower: any text splits as the general path splits it.
func FuzzLower(f *testing.F) {
	for _, s := range []string{"", "Deploy FAILED on Staging-2", "Café", "İ", "a\xffB", "\u00a0x\u2003Y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Lower(s), reference(s); !slices.Equal(got, want) {
			t.Fatalf("Lower(%q) = %q, want %q", s, got, want)
		}
	})
}

// BenchmarkLower splits an item's text of about two hundred bytes, as the
// pack builder does for each delivered item, against the general path it
// replaces, in the same run:
//
//	go test ./internal/words -run '^$' -bench Lower -count 10
func BenchmarkLower(b *testing.B) {
	texts := map[string]string{
		"lower":   "the deploy of release 4.2 failed on the staging cluster after the schema migration timed out; rollback finished at 14:02 and the on-call engineer opened an incident for the payments team",
		"capital": "The deploy of Release 4.2 failed on the Staging cluster after the schema migration timed out. Rollback finished at 14:02 and the on-call engineer opened INC-2231 for the Payments team.",
	}
	for _, name := range []string{"lower", "capital"} {
		s := texts[name]
		b.Run("text="+name+"/path=ascii", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Lower(s)
			}
		})
		b.Run("text="+name+"/path=general", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				reference(s)
			}
		})
	}
}
