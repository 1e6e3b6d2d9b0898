package ingest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"path"
	"regexp"
	"strings"
	"sync"

	ahocorasick "github.com/BobuSumisu/aho-corasick"
	"github.com/spf13/viper"
	"github.com/zricethezav/gitleaks/v8/config"
)

// secretScanner tells whether a file holds credentials, by its name and
// by its content. Content is checked against gitleaks' default rule set
// (github.com/zricethezav/gitleaks/v8/config, MIT licence), evaluated
// here as gitleaks' detector does (keyword prefilter, rule regex, secret
// group, entropy floor, global and rule allowlists) without that
// detector's package, which brings archive readers and a terminal UI.
type secretScanner struct {
	names credMatcher
	rules []config.Rule
	// byKeyword maps a lower-case keyword to the rules it admits; rules
	// without keywords always run.
	byKeyword map[string][]int
	always    []int
	windowed  []bool   // by rule: windowedRules
	keywords  []string // the trie's patterns, by index
	trie      *ahocorasick.Trie
	global    []*config.Allowlist
}

// credentialNames are file names (shell globs, matched case-insensitively
// on the base name or on the path's last folders) of files that hold
// credentials whatever their content looks like. They apply besides the
// configured patterns (H4R_INGEST_CREDENTIAL_PATTERNS).
var credentialNames = []string{
	// Environment files: .env, .env.prod, prod.env, direnv's .envrc.
	".env", ".env.*", "*.env", ".envrc",
	// Keys and key stores.
	"*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore", "*.ppk",
	"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_rsa.*", "id_dsa.*", "id_ecdsa.*", "id_ed25519.*",
	// Tool credentials.
	".netrc", "_netrc", ".npmrc", ".pypirc", ".pgpass", ".git-credentials", ".htpasswd", ".s3cfg",
	".aws/credentials", ".aws/config", ".docker/config.json", ".dockercfg", ".dockerconfigjson",
	"kubeconfig", "*.kubeconfig", ".kube/config",
	"*.tfstate", "*.tfstate.backup", "*.tfvars",
	"credentials", "credentials.*", "service-account*.json", "service_account*.json", "*serviceaccount*.json",
	"secrets", "*.secret", "*.secrets", "*.ovpn", "wp-config.php", "*.mobileprovision",
}

// secretConfigNames are the stems of configuration files named for the
// secrets they hold (application-secrets.yml, db_secret.json), with the
// configuration extensions they take: a Go or Markdown file named so
// handles secrets rather than holding them.
var secretConfigNames = func() []string {
	var out []string
	for _, stem := range []string{"secrets", "*-secrets", "*_secrets", "*.secrets", "*-secret", "*_secret", "*.secret"} {
		for _, ext := range []string{"yml", "yaml", "json", "toml", "ini", "properties", "conf", "cfg", "env", "txt", "xml"} {
			out = append(out, stem+"."+ext)
		}
	}
	return out
}()

// notCredentialNames are names the globs of credentialNames catch that
// hold nothing secret: public keys, and source files named after what
// they handle (secrets.go parses secrets; it does not hold them). Their
// content is still scanned, and configured patterns still apply.
var notCredentialNames = []string{"*.pub", "*.go", "*.py", "*.js", "*.ts", "*.java", "*.rb", "*.rs", "*.c", "*.h", "*.md",
	".env.example", ".env.sample", ".env.template", ".env.dist"}

// identifierLike are values the generic rule (generic-api-key) takes for
// secrets that are names: an environment variable's name in a list
// ("H4R_LOW_RELEVANCE_THRESHOLD"), a lower-case slug ("ci-env-dump-18342").
// gitleaks lets only names without digits go.
var identifierLike = regexp.MustCompile(`^(?:[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[a-z]+(?:-(?:[a-z]+|[0-9]+))+)$`)

// credRulesPath is the file index entry (a path no listed file has: they
// are relative) whose sha names the credential rules a source's files were
// last checked with.
const credRulesPath = "/h4r/credential-rules"

// credentialRulesVersion names the credential rules and settings in
// force: gitleaks' rule set, the private-key header, link targets
// judged by name, the built-in names and exceptions, the
// configured patterns and the mode. When it changes, a source's unchanged
// files are checked again.
func credentialRulesVersion(patterns []string, mode string) string {
	h := sha256.New()
	for _, part := range [][]string{{config.DefaultConfig, identifierLike.String(), privateKeyHeader.String(), "link targets", mode, fmt.Sprint(windowBefore, windowAfter)},
		credentialNames, secretConfigNames, notCredentialNames, patterns} {
		for _, s := range part {
			h.Write([]byte(s))
			h.Write([]byte{0})
		}
		h.Write([]byte{1})
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// secretRules is gitleaks' default configuration, compiled once: it is
// read-only after, and every Ingester shares it.
var secretRules = sync.OnceValues(func() (config.Config, error) {
	v := viper.New()
	v.SetConfigType("toml")
	if err := v.ReadConfig(strings.NewReader(config.DefaultConfig)); err != nil {
		return config.Config{}, fmt.Errorf("reading gitleaks' default rules: %w", err)
	}
	var vc config.ViperConfig
	if err := v.Unmarshal(&vc); err != nil {
		return config.Config{}, fmt.Errorf("reading gitleaks' default rules: %w", err)
	}
	cfg, err := vc.Translate()
	if err != nil {
		return config.Config{}, fmt.Errorf("compiling gitleaks' default rules: %w", err)
	}
	return cfg, nil
})

// newSecretScanner returns a scanner of the built-in names and gitleaks'
// default rules.
func newSecretScanner() (*secretScanner, error) {
	cfg, err := secretRules()
	if err != nil {
		return nil, err
	}
	s := &secretScanner{names: newCredMatcher(append(append([]string(nil), credentialNames...), secretConfigNames...)),
		byKeyword: map[string][]int{}, global: cfg.Allowlists}
	for _, r := range cfg.GetOrderedRules() {
		if r.Regex == nil && r.Path == nil {
			continue
		}
		i := len(s.rules)
		s.rules = append(s.rules, r)
		s.windowed = append(s.windowed, windowedRules[r.RuleID] && len(r.Keywords) > 0)
		if len(r.Keywords) == 0 {
			s.always = append(s.always, i)
		}
		for _, k := range r.Keywords {
			k = strings.ToLower(k)
			s.byKeyword[k] = append(s.byKeyword[k], i)
		}
	}
	for k := range s.byKeyword {
		s.keywords = append(s.keywords, k)
	}
	s.trie = ahocorasick.NewTrieBuilder().AddStrings(s.keywords).Build()
	return s, nil
}

// nameMatch reports whether p's name says it holds credentials.
func (s *secretScanner) nameMatch(p string) bool {
	lp := strings.ToLower(p)
	if notCredential(lp) {
		return false
	}
	return matchTails(s.names, lp)
}

// matchTails matches p, then each of its tails after a "/", so that a
// pattern naming a folder (".aws/credentials") matches wherever that
// folder is.
func matchTails(m credMatcher, p string) bool {
	if m.match(p) {
		return true
	}
	for i := 0; i < len(p); i++ {
		if p[i] == '/' && m.match(p[i+1:]) {
			return true
		}
	}
	return false
}

func notCredential(lp string) bool {
	base := path.Base(lp)
	for _, pat := range notCredentialNames {
		if ok, _ := path.Match(pat, base); ok {
			return true
		}
	}
	return false
}

// windowedRules run on the text around their keywords rather than on the
// whole text: gitleaks' generic rule, whose keywords ("key", "token",
// "api", "auth") are on most lines of code, and whose unanchored regex is
// most of a scan's cost on the whole text. Its match holds a keyword, does
// not start before that keyword's line nor more than 50 bytes before it,
// and is at most about 250 bytes long (but for an unbounded base64 run,
// which a window cuts, still matching).
var windowedRules = map[string]bool{"generic-api-key": true}

const (
	windowBefore = 64  // bytes before a keyword a window starts, at most (and not before its line)
	windowAfter  = 512 // bytes after a keyword a window ends
)

// scan returns the id of the first rule that finds a secret in text (p is
// its path, for path rules and allowlists), or "".
func (s *secretScanner) scan(p, text string) string {
	for _, a := range s.global {
		if a.MatchCondition == config.AllowlistMatchOr && a.PathAllowed(p) {
			return ""
		}
	}
	var run []bool
	var windows map[int][][2]int // rule → merged windows, in order
	// Lower-cased byte for byte (ASCII only), so that a keyword's position
	// is its position in text.
	s.trie.Walk(lowerASCII(text), func(end, n, pattern int64) bool {
		for _, i := range s.byKeyword[s.keywords[pattern]] {
			if run == nil {
				run = make([]bool, len(s.rules))
			}
			if !s.windowed[i] {
				run[i] = true
				continue
			}
			if windows == nil {
				windows = map[int][][2]int{}
			}
			pos := int(end - n + 1)
			lo := max(pos-windowBefore, strings.LastIndexByte(text[:pos], '\n')+1)
			hi := min(len(text), int(end)+1+windowAfter)
			ws := windows[i]
			if n := len(ws); n > 0 && lo <= ws[n-1][1] {
				ws[n-1][1] = max(ws[n-1][1], hi)
			} else {
				ws = append(ws, [2]int{lo, hi})
			}
			windows[i] = ws
		}
		return true
	})
	for _, i := range s.always {
		if id := s.rule(&s.rules[i], p, text, 0, len(text)); id != "" {
			return id
		}
	}
	for i, ok := range run {
		if ok {
			if id := s.rule(&s.rules[i], p, text, 0, len(text)); id != "" {
				return id
			}
		}
	}
	for i := range s.rules {
		for _, w := range windows[i] {
			if id := s.rule(&s.rules[i], p, text, w[0], w[1]); id != "" {
				return id
			}
		}
	}
	return ""
}

// lowerASCII lower-cases the ASCII letters of s, keeping its length.
func lowerASCII(s string) []byte {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return b
}

// rule applies one rule, as gitleaks' detectRule does, to text[lo:hi].
func (s *secretScanner) rule(r *config.Rule, p, text string, lo, hi int) string {
	for _, a := range r.Allowlists {
		if a.MatchCondition == config.AllowlistMatchOr && a.PathAllowed(p) {
			return ""
		}
	}
	if r.Path != nil {
		if !r.Path.MatchString(p) {
			return ""
		}
		if r.Regex == nil {
			return r.RuleID // a path-only rule
		}
	}
	for _, loc := range r.Regex.FindAllStringIndex(text[lo:hi], -1) {
		start, end := lo+loc[0], lo+loc[1]
		match := strings.Trim(text[start:end], "\n")
		secret := match
		if groups := r.Regex.FindStringSubmatch(match); len(groups) >= 2 {
			if r.SecretGroup > 0 && r.SecretGroup < len(groups) {
				secret = groups[r.SecretGroup]
			} else {
				for _, g := range groups[1:] {
					if g != "" {
						secret = g
						break
					}
				}
			}
		}
		if r.Entropy != 0 && shannonEntropy(secret) <= r.Entropy {
			continue
		}
		line := lineAround(text, start, start+len(match))
		if allowed(s.global, p, secret, match, line) || allowed(r.Allowlists, p, secret, match, line) {
			continue
		}
		if r.RuleID == "generic-api-key" && identifierLike.MatchString(secret) {
			continue
		}
		return r.RuleID
	}
	return ""
}

// allowed is gitleaks' checkFindingAllowed: an allowlist's regexes (on
// the secret, the match or the line) or stop words let a finding go; with
// the AND condition, all of its checks must hold (commits never do here).
func allowed(lists []*config.Allowlist, p, secret, match, line string) bool {
	for _, a := range lists {
		target := secret
		switch a.RegexTarget {
		case "match":
			target = match
		case "line":
			target = line
		}
		regexOK := a.RegexAllowed(target)
		stop, _ := a.ContainsStopWord(secret)
		if a.MatchCondition != config.AllowlistMatchAnd {
			if regexOK || stop {
				return true
			}
			continue
		}
		ok := len(a.Commits) == 0
		if len(a.Paths) > 0 {
			ok = ok && a.PathAllowed(p)
		}
		if len(a.Regexes) > 0 {
			ok = ok && regexOK
		}
		if len(a.StopWords) > 0 {
			ok = ok && stop
		}
		if ok {
			return true
		}
	}
	return false
}

// lineAround is the text of the lines holding text[start:end].
func lineAround(text string, start, end int) string {
	if i := strings.LastIndexByte(text[:start], '\n'); i >= 0 {
		start = i + 1
	} else {
		start = 0
	}
	if i := strings.IndexByte(text[end:], '\n'); i >= 0 {
		end += i
	} else {
		end = len(text)
	}
	return text[start:end]
}

// shannonEntropy is gitleaks' measure of a secret's randomness, in bits
// per byte.
func shannonEntropy(s string) float64 {
	if s == "" {
		return 0
	}
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	var e float64
	n := float64(len(s))
	for _, c := range counts {
		if c > 0 {
			f := float64(c) / n
			e -= f * math.Log2(f)
		}
	}
	return e
}
