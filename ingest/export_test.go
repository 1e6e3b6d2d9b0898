package ingest

// CredentialCases are the credential files of secrets_test.go, as
// path → content, for the end-to-end test in package ingest_test.
func CredentialCases() map[string]string {
	out := map[string]string{}
	for _, c := range credentialCases() {
		out[c.path] = c.content
	}
	return out
}
