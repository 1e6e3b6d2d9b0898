package chunk

import "testing"

func fuzzSeeds(f *testing.F) {
	for _, s := range []string{"", "# a\n## b\ntext", "package x\nfunc f() {}\n", "def a():\n  pass\n\nclass B:\n  x=1\n",
		"```\n# x\n```\n", "a\r\nb\r\n\r\nc", "\xff\xfe", "#\n##\n###### t ######\n", "~~~~\n```\n~~~~\n# h\n"} {
		f.Add(s)
	}
}

func FuzzMarkdown(f *testing.F) {
	fuzzSeeds(f)
	s := New(counter(f), WithMaxTokens(24), WithOverlapTokens(8))
	f.Fuzz(func(t *testing.T, src string) { checkChunks(t, s, src, s.Split("x.md", src)) })
}

func FuzzGo(f *testing.F) {
	fuzzSeeds(f)
	s := New(counter(f), WithMaxTokens(24), WithOverlapTokens(8))
	f.Fuzz(func(t *testing.T, src string) { checkChunks(t, s, src, s.Split("x.go", src)) })
}

func FuzzCode(f *testing.F) {
	fuzzSeeds(f)
	s := New(counter(f), WithMaxTokens(24), WithOverlapTokens(8))
	f.Fuzz(func(t *testing.T, src string) { checkChunks(t, s, src, s.Split("x.py", src)) })
}

func FuzzText(f *testing.F) {
	fuzzSeeds(f)
	s := New(counter(f), WithMaxTokens(24), WithOverlapTokens(8))
	f.Fuzz(func(t *testing.T, src string) { checkChunks(t, s, src, s.Split("x.txt", src)) })
}
