package ingest

import (
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// randToken is a deterministic random string of n characters of alphabet:
// the credentials below are built at run time, so that the repository
// holds no string a secret scanner would flag.
func randToken(seed uint64, n int, alphabet string) string {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

const (
	alnum  = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	upper2 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	b64    = alnum + "+/"
)

// pemKey is a private key block of the given type, with random body.
func pemKey(kind string, seed uint64) string {
	var body strings.Builder
	for i := range 6 {
		body.WriteString(randToken(seed+uint64(i), 64, b64) + "\n")
	}
	return "-----BEGIN " + kind + " PRIVATE KEY-----\n" + body.String() + "-----END " + kind + " PRIVATE KEY-----\n"
}

// credentialCase is a file that holds a credential, as it is typically
// named and written.
type credentialCase struct {
	name, path, content string
}

// credentialCases are the thirteen files and three inline secrets that
// ingestion delivered unflagged when it knew only a case-sensitive list
// of file names (only .ssh/id_rsa was flagged).
func credentialCases() []credentialCase {
	ghp := "gh" + "p_" + randToken(1, 36, alnum)
	awsID := "AK" + "IA" + randToken(2, 16, upper2)
	awsSecret := randToken(3, 40, b64)
	return []credentialCase{
		{"upper-case .ENV", ".ENV", "DATABASE_URL=postgres://app:" + randToken(4, 20, alnum) + "@db:5432/app\nDEBUG=false\n"},
		{"environment file named prod.env", "deploy/prod.env", "STRIPE_WEBHOOK=whsec_" + randToken(5, 32, alnum) + "\nLOG_LEVEL=info\n"},
		{"AWS shared credentials", "home/dev/.aws/credentials", "[default]\naws_access_key_id = " + awsID + "\naws_secret_access_key = " + awsSecret + "\n"},
		{"git credential store", ".git-credentials", "https://bob:" + ghp + "@github.com\n"},
		{"direnv file", ".envrc", "export API_TOKEN=" + randToken(6, 32, alnum) + "\nlayout go\n"},
		{"kubeconfig", "ops/kubeconfig", "apiVersion: v1\nkind: Config\nusers:\n- name: admin\n  user:\n    token: " + randToken(7, 48, alnum) + "\n"},
		{"terraform state", "infra/terraform.tfstate", `{"version": 4, "resources": [{"type": "aws_db_instance", "instances": [{"attributes": {"username": "admin", "password": "` + randToken(8, 24, alnum) + `"}}]}]}` + "\n"},
		{"htpasswd", "web/.htpasswd", "admin:$apr1$" + randToken(9, 8, alnum) + "$" + randToken(10, 22, alnum) + "\n"},
		{"GCP service account key", "keys/service-account.json", `{"type": "service_account", "project_id": "demo", "private_key_id": "` + randToken(11, 40, "0123456789abcdef") + `", "private_key": "` + strings.ReplaceAll(pemKey("", 12), "\n", `\n`) + `", "client_email": "ci@demo.iam.gserviceaccount.com"}` + "\n"},
		{"docker config secret", "k8s/.dockerconfigjson", `{"auths": {"registry.example.com": {"auth": "` + randToken(13, 40, b64) + `="}}}` + "\n"},
		{"backup of an SSH key", "home/dev/.ssh/id_rsa.bak", pemKey("RSA", 14)},
		{"SSH key", "home/dev/.ssh/id_rsa", pemKey("OPENSSH", 15)},
		{"application secrets", "src/main/resources/application-secrets.yml", "spring:\n  datasource:\n    password: " + randToken(16, 24, alnum) + "\n"},
		{"inline AWS secret key in config.txt", "conf/config.txt", "region = eu-west-1\naws_secret_access_key = " + awsSecret + "\n"},
		{"inline GitHub token in a README", "README.md", "# Deploy\n\nRun the deploy with the bot's token:\n\n    GITHUB_TOKEN=" + ghp + " make deploy\n"},
		{"inline Stripe live key in code", "billing/charge.go", "package billing\n\nimport \"github.com/stripe/stripe-go\"\n\nfunc init() {\n\tstripe.Key = \"" + "sk" + "_live_" + randToken(17, 24, alnum) + "\"\n}\n"},
	}
}

// plainCases hold nothing secret, though their names or words are close.
func plainCases() []credentialCase {
	return []credentialCase{
		{"public SSH key", "home/dev/.ssh/id_rsa.pub", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx0bW9yZQ dev@laptop\n"},
		{"code handling secrets", "internal/secrets.go", "package secrets\n\n// Token reads the API token from the environment.\nfunc Token() string { return os.Getenv(\"API_TOKEN\") }\n"},
		{"docs with placeholders", "docs/auth.md", "# Auth\n\nSet `API_KEY=<your key>` or `token: ${GITHUB_TOKEN}`; the password is read from `$DB_PASSWORD`.\n"},
		{"env template", ".env.example", "API_TOKEN=\nDATABASE_URL=postgres://localhost/app\n"},
		{"list of setting names", "config/names.go", "var names = []string{\"H4R_AMBIENT_MAX_PER_KEY\", \"H4R_LOW_RELEVANCE_THRESHOLD\", \"H4R_API_KEYS\"}\n"},
		{"slugs", "demo/queries.json", `{"ids": ["rb-rotate-ci-token", "ci-env-dump-18342"]}` + "\n"},
	}
}

func testScanner(t testing.TB) *secretScanner {
	t.Helper()
	s, err := newSecretScanner()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// runWriter is what a run of in checks files with: its writer, holding the
// content rules the run built.
func runWriter(t testing.TB, in *Ingester) *writer {
	t.Helper()
	s, err := in.secrets()
	if err != nil {
		t.Fatal(err)
	}
	return &writer{in: in, secrets: s}
}

// TestSecretScannerFlagsCredentials: each typical credential file and
// inline secret is found, by its name or its content, and none of the
// near misses is.
func TestSecretScannerFlagsCredentials(t *testing.T) {
	s := testScanner(t)
	for _, c := range credentialCases() {
		t.Run(c.name, func(t *testing.T) {
			byName, rule := s.nameMatch(c.path), s.scan(c.path, c.content)
			if !byName && rule == "" {
				t.Fatalf("%s is not flagged, by name or content", c.path)
			}
			t.Logf("name: %v, content rule: %q", byName, rule)
		})
	}
	for _, c := range plainCases() {
		t.Run("plain/"+c.name, func(t *testing.T) {
			if s.nameMatch(c.path) {
				t.Errorf("%s is flagged by its name", c.path)
			}
			if rule := s.scan(c.path, c.content); rule != "" {
				t.Errorf("%s is flagged by rule %s", c.path, rule)
			}
		})
	}
}

// knownSecretFixtures are the repository's test fixtures that hold a fake
// credential on purpose: the scanner must flag them.
var knownSecretFixtures = map[string]bool{"server/testdata/items.json": true}

// repoCorpus is the repository's ordinary code and documentation: its
// non-test Go files, its Markdown, and the files of its testdata folders.
func repoCorpus(t testing.TB) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, ".."+string(filepath.Separator)))
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && p != ".." || d.Name() == "node_modules" {
				return fs.SkipDir
			}
			return nil
		}
		inTestdata := strings.Contains("/"+rel, "/testdata/")
		ordinary := (strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, "_test.go")) || strings.HasSuffix(rel, ".md")
		if !ordinary && !inTestdata || !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil || len(b) > DefaultMaxFileBytes || strings.IndexByte(string(b[:min(len(b), 8000)]), 0) >= 0 {
			return err
		}
		out[rel] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 100 {
		t.Fatalf("the corpus has %d files: not the repository", len(out))
	}
	return out
}

// TestSecretScannerNoFalsePositives: the repository's own code, docs and
// test data are not flagged, but for the fixtures that hold a fake
// credential on purpose.
func TestSecretScannerNoFalsePositives(t *testing.T) {
	s := testScanner(t)
	for p, text := range repoCorpus(t) {
		got := ""
		if s.nameMatch(p) {
			got = "its name"
		} else if rule := s.scan(p, text); rule != "" {
			got = "rule " + rule
		}
		if knownSecretFixtures[p] {
			if got == "" {
				t.Errorf("%s holds a fake credential on purpose and is not flagged", p)
			}
			continue
		}
		if got != "" {
			t.Errorf("%s is flagged by %s", p, got)
		}
	}
}

// TestNameMatchCaseAndFolders: names match in any case and wherever their
// folder is; configured patterns too (writer.isCredential).
func TestNameMatchCaseAndFolders(t *testing.T) {
	w := runWriter(t, New(nil, nil, nil, WithCredentialPatterns("*.Vault", "conf/prod.yaml")))
	cases := []struct {
		path string
		want bool
	}{
		{".Env", true}, {"a/b/.ENV.local", true}, {"x/.AWS/Credentials", true}, {".aws/config", true},
		{"deep/conf/PROD.yaml", true}, {"store.vault", true}, {"Terraform.TFSTATE", true},
		{"ID_RSA", true}, {"id_rsa.pub", false}, {"conf/dev.yaml", false}, {"main.go", false},
		{"credentials.go", false}, {"awscredentials", false},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			if got := w.isCredential(c.path); got != c.want {
				t.Errorf("isCredential(%q) = %v, want %v", c.path, got, c.want)
			}
		})
	}
}

// FuzzSecretScan: no path or content crashes the scanner, and a content
// it flags stays flagged with ordinary lines around it (a finding does not
// depend on where the file's text starts or ends).
func FuzzSecretScan(f *testing.F) {
	for _, c := range append(credentialCases(), plainCases()...) {
		f.Add(c.path, c.content)
	}
	f.Add("", "")
	f.Add("x", "-----BEGIN PRIVATE KEY-----")
	s := testScanner(f)
	f.Fuzz(func(t *testing.T, p, text string) {
		s.nameMatch(p)
		rule := s.scan(p, text)
		if rule == "" && wholeTextScanner(s).scan(p, text) != "" {
			t.Fatalf("the whole-text scan flags %q, the windowed scan does not", text)
		}
		if rule == "" || s.rules[s.ruleIndex(rule)].Path != nil {
			return
		}
		if again := s.scan(p, "// header\n"+text+"\n// footer\n"); again == "" {
			t.Fatalf("rule %s flags %q but not with lines around it", rule, text)
		}
		if whole := wholeTextScanner(s).scan(p, text); whole == "" {
			t.Fatalf("rule %s flags %q in a window but nothing does on the whole text", rule, text)
		}
	})
}

func (s *secretScanner) ruleIndex(id string) int {
	for i := range s.rules {
		if s.rules[i].RuleID == id {
			return i
		}
	}
	return -1
}

// BenchmarkCredentialCheck checks the repository's code and docs as an
// ingest of changed files does: the file-name list alone (the check before
// content rules) and the names with gitleaks' content rules. Besides wall
// time it reports the process's CPU time per op (cpu-ns/op, cpu-MB/s),
// which a shared machine's load does not inflate.
func BenchmarkCredentialCheck(b *testing.B) {
	corpus := repoCorpus(b)
	var total int64
	paths := make([]string, 0, len(corpus))
	for p, text := range corpus {
		total += int64(len(text))
		paths = append(paths, p)
	}
	b.Logf("%d files, %d bytes", len(corpus), total)
	measure := func(b *testing.B, check func(p string)) {
		b.SetBytes(total)
		start := cpuTime()
		for b.Loop() {
			for _, p := range paths {
				check(p)
			}
		}
		cpu := float64(cpuTime()-start) / float64(b.N)
		b.ReportMetric(cpu, "cpu-ns/op")
		b.ReportMetric(float64(total)/cpu*1e3, "cpu-MB/s")
	}
	b.Run("names only (before)", func(b *testing.B) {
		m := newCredMatcher(DefaultCredentialPatterns)
		measure(b, func(p string) { m.match(p) })
	})
	b.Run("names and content rules", func(b *testing.B) {
		s := testScanner(b)
		w := runWriter(b, New(nil, nil, nil))
		measure(b, func(p string) {
			if !w.isCredential(p) {
				s.scan(p, corpus[p])
			}
		})
	})
	b.Run("names and content rules, no windows", func(b *testing.B) {
		s := wholeTextScanner(testScanner(b))
		w := runWriter(b, New(nil, nil, nil))
		measure(b, func(p string) {
			if !w.isCredential(p) {
				s.scan(p, corpus[p])
			}
		})
	})
}

// cpuTime is the process's user and system CPU time, in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// wholeTextScanner is s with no rule windowed: the reference a windowed
// scan must agree with.
func wholeTextScanner(s *secretScanner) *secretScanner {
	w := *s
	w.windowed = make([]bool, len(s.rules))
	return &w
}

// TestWindowedScanAgreesWithWholeText: running the generic rule on the
// windows around its keywords finds a secret in exactly the files that
// running it on their whole text does, on the repository and the cases.
func TestWindowedScanAgreesWithWholeText(t *testing.T) {
	s := testScanner(t)
	whole := wholeTextScanner(s)
	texts := repoCorpus(t)
	for _, c := range append(credentialCases(), plainCases()...) {
		texts["case/"+c.path] = c.content
	}
	for p, text := range texts {
		if got, want := s.scan(p, text) != "", whole.scan(p, text) != ""; got != want {
			t.Errorf("%s: windowed scan flags %v, whole-text scan %v", p, got, want)
		}
	}
}
