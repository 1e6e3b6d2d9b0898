package tenant

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/internal/jsonstrict"
)

// MaxTenants bounds the tenants file: each tenant is a service of its own.
const MaxTenants = 1000

// Spec is one tenant of the tenants file.
type Spec struct {
	Name string `json:"name"`
	// Quotas; 0: unlimited.
	MaxItems          int   `json:"maxItems,omitempty"`
	MaxBytes          int64 `json:"maxBytes,omitempty"` // bytes of item text and content
	RequestsPerMinute int   `json:"requestsPerMinute,omitempty"`
	// PolicyDir is the tenant's own Rego bundle; empty: the default
	// tenant's policy (SCS_POLICY_DIR, or the bundled one).
	PolicyDir string `json:"policyDir,omitempty"`
	// WebhookSecretFile holds the tenant's GitHub webhook secret; empty:
	// the tenant's webhook refuses every delivery.
	WebhookSecretFile string `json:"webhookSecretFile,omitempty"`
	// IngestRoots are the folders POST /ingest may read the tenant's
	// local sources from (comma-separated, as H4R_INGEST_ROOTS); empty:
	// none, for the default tenant's folders are not the tenant's.
	IngestRoots string `json:"ingestRoots,omitempty"`
}

func (s Spec) check(field string) error {
	if err := CheckName(s.Name); err != nil {
		return h4r.Errorf(h4r.EINVALID, field+".name", "%s", err.(*h4r.Error).Message)
	}
	if s.Name == Default {
		return h4r.Errorf(h4r.EINVALID, field+".name", "%q is the implicit tenant and is not listed", Default)
	}
	if s.MaxItems < 0 || s.MaxBytes < 0 || s.RequestsPerMinute < 0 {
		return h4r.Errorf(h4r.EINVALID, field, "quotas must be >= 0 (0: unlimited)")
	}
	return nil
}

// Registry is the tenants file: the tenants besides Default.
type Registry struct {
	path  string
	specs []Spec
}

// Load reads the tenants file at path; a file that does not exist yet is
// an empty registry (h4r tenants create makes it).
func Load(path string) (*Registry, error) {
	r := &Registry{path: path}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the tenants file: %w", err)
	}
	if err := jsonstrict.Decode(b, &r.specs, ""); err != nil {
		return nil, fmt.Errorf("tenants file %s: %w", path, err)
	}
	if len(r.specs) > MaxTenants {
		return nil, fmt.Errorf("tenants file %s: at most %d tenants, got %d", path, MaxTenants, len(r.specs))
	}
	seen := map[string]bool{}
	for i, s := range r.specs {
		at := fmt.Sprintf("[%d]", i)
		if err := s.check(at); err != nil {
			return nil, fmt.Errorf("tenants file %s: %w", path, err)
		}
		if seen[s.Name] {
			return nil, fmt.Errorf("tenants file %s: %w", path, h4r.Errorf(h4r.EINVALID, at+".name", "tenant %q is listed twice", s.Name))
		}
		seen[s.Name] = true
	}
	return r, nil
}

// Specs returns the listed tenants, in file order.
func (r *Registry) Specs() []Spec { return slices.Clone(r.specs) }

// Lookup returns a tenant's spec; Default is always there, with no quota.
func (r *Registry) Lookup(name string) (Spec, bool) {
	if name == Default {
		return Spec{Name: Default}, true
	}
	i := slices.IndexFunc(r.specs, func(s Spec) bool { return s.Name == name })
	if i < 0 {
		return Spec{}, false
	}
	return r.specs[i], true
}

// Add lists a new tenant and saves the file.
func (r *Registry) Add(s Spec) error {
	if err := s.check("tenant"); err != nil {
		return err
	}
	if _, ok := r.Lookup(s.Name); ok {
		return h4r.Errorf(h4r.EINVALID, "tenant", "tenant %q exists already", s.Name)
	}
	if len(r.specs) >= MaxTenants {
		return h4r.Errorf(h4r.EEXHAUSTED, "tenant", "at most %d tenants", MaxTenants)
	}
	r.specs = append(r.specs, s)
	return r.save()
}

// Remove unlists a tenant and saves the file.
func (r *Registry) Remove(name string) error {
	i := slices.IndexFunc(r.specs, func(s Spec) bool { return s.Name == name })
	if i < 0 {
		return h4r.Errorf(h4r.ENOTFOUND, "tenant", "no tenant %q in %s", name, r.path)
	}
	r.specs = slices.Delete(r.specs, i, i+1)
	return r.save()
}

// save writes the file whole, through a temporary file renamed over it,
// so that a server starting meanwhile reads the old list or the new one.
func (r *Registry) save() error {
	specs := r.specs
	if specs == nil {
		specs = []Spec{}
	}
	b, err := json.MarshalIndent(specs, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the tenants file: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(r.path), ".tenants-*.json")
	if err != nil {
		return fmt.Errorf("writing the tenants file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("writing the tenants file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing the tenants file: %w", err)
	}
	if err := os.Rename(tmp.Name(), r.path); err != nil {
		return fmt.Errorf("replacing the tenants file: %w", err)
	}
	return nil
}
