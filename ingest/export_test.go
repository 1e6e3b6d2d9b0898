package ingest

import ahocorasick "github.com/BobuSumisu/aho-corasick"

// CredentialCases are the credential files of secrets_test.go, as
// path → content, for the end-to-end test in package ingest_test.
func CredentialCases() map[string]string {
	out := map[string]string{}
	for _, c := range credentialCases() {
		out[c.path] = c.content
	}
	return out
}

// UseNameRulesOnly makes in check credentials as ingestion did before its
// content rules: by the configured file names alone, under another rules
// version. It stands for an index written by that version.
func UseNameRulesOnly(in *Ingester) {
	names := &secretScanner{names: newCredMatcher(nil), byKeyword: map[string][]int{},
		trie: ahocorasick.NewTrieBuilder().Build()}
	in.secrets = func() (*secretScanner, error) { return names, nil }
	in.credVersion = "names only"
}

// WithCountedContentRules makes in build its content rules as New does,
// counting each build in *builds, or failing each with fail when it is not
// nil.
func WithCountedContentRules(builds *int, fail error) Option {
	return func(in *Ingester) {
		in.buildSecrets = func() (*secretScanner, error) {
			*builds++
			if fail != nil {
				return nil, fail
			}
			return newSecretScanner()
		}
	}
}
