package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/labstack/echo/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/auth"
	"github.com/h4r/h4r/internal/natstest"
	"github.com/h4r/h4r/internal/pgtest"
	"github.com/h4r/h4r/tenant"
)

// The canary harness across tenants: every canary is written into
// seedTenant by the seeder and vault keys, and every surface is probed
// with the keys of probeTenant (and without a key, the default tenant's
// caller). Whatever a canary's class, a probe that sees its marker, or
// answers about one of its ids otherwise than about an id that never
// existed, is a finding: it is another tenant's data.
const (
	probeTenant = "cnry_a"
	seedTenant  = "cnry_b"
)

// tenantCanaryVars are canaryVars with the probe keys in probeIn
// (probeTenant, but for the harness's self-test), the seeder and vault keys
// in seedTenant, and both tenants created.
func tenantCanaryVars(t *testing.T, dataDir, databaseURL, probeIn string) map[string]string {
	vars := canaryVars(t, dataDir, databaseURL)
	dir := t.TempDir()
	vars["H4R_API_KEYS_FILE"] = writeTenantKeysFile(t, dir, func(k keyClass) string {
		if k.name == keySeeder.name || k.name == keyVault.name {
			return seedTenant
		}
		return probeIn
	})
	vars["H4R_TENANTS_FILE"] = filepath.Join(dir, "tenants.json")
	cfg, err := app.LoadConfig(env(vars))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tenant.Load(cfg.TenantsFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{probeTenant, seedTenant} {
		spec := tenant.Spec{Name: name}
		if name == seedTenant {
			spec.IngestRoots = vars["H4R_INGEST_ROOTS"] // the chunk canaries' folder
		}
		if _, err := tenant.Delete(context.Background(), cfg, spec); err != nil { // a run killed before its cleanup
			t.Fatal(err)
		}
		if err := reg.Add(spec); err != nil {
			t.Fatal(err)
		}
		if err := tenant.Create(context.Background(), cfg, spec); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if _, err := tenant.Delete(context.Background(), cfg, spec); err != nil {
				t.Errorf("deleting tenant %s: %v", name, err)
			}
		})
	}
	return vars
}

// startTenantCanaryServer serves every tenant behind the router, exactly
// as cmdServe does (openService). Its app is the seed tenant's.
func startTenantCanaryServer(t *testing.T, vars map[string]string) *canaryServer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cfg, err := app.LoadConfig(env(vars))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := auth.Load(cfg.APIKeysFile)
	if err != nil {
		t.Fatal(err)
	}
	log := quietLog()
	stalls := map[string]*stallSlicer{}
	svc, err := openService(ctx, cfg, keys, false, false, log, func(name string) []app.Option {
		stalls[name] = &stallSlicer{}
		return []app.Option{stalls[name].appOption()}
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range stalls {
		s.inner.Store(svc.stacks[name].a.Slicer)
	}
	def := svc.stacks[tenant.Default]
	e, ok := def.api.Handler().(*echo.Echo)
	if !ok {
		t.Fatalf("the server's handler is %T, not the echo router the route registry is read from", def.api.Handler())
	}
	var routes []string
	for _, r := range e.Router().Routes() {
		routes = append(routes, r.Method+" "+r.Path)
	}
	sort.Strings(routes)
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = def.api.HTTPServer()
	ts.Config.Handler = stallRequests(svc.handler)
	ts.Listener = def.api.Listener(ts.Listener)
	ts.Start()
	t.Cleanup(func() {
		ts.Close()
		cancel()
		svc.close(log)
	})
	return &canaryServer{base: ts.URL, debug: startCanaryDebug(t), routes: routes, app: svc.stacks[seedTenant].a, stall: stalls[seedTenant]}
}

// traceSubject is where the harness publishes commit traces over NATS:
// the seed tenant's subject when the canaries are another tenant's.
func (h *harness) traceSubject() string {
	if h.tenants {
		return h.vars["H4R_TRACE_SUBJECT"] + "." + seedTenant
	}
	return h.vars["H4R_TRACE_SUBJECT"]
}

// seedProbeTenant gives the seed tenant an item every one of its keys may
// read (another tenant's open data is as forbidden as its secrets), and
// the probe tenant items of its own under the seed tenant's ids and words,
// so that the probes' answers are not empty and an id that exists in both
// tenants is answered from the caller's.
func (h *harness) seedProbeTenant() {
	t := h.t
	o := newMarker("open")
	h.det.add(canary{kind: "item", class: "open", marker: o, what: "another tenant's open item text"})
	mustCall(t, h.writer.base, keySeeder, "POST", "/v1/items", fmt.Sprintf(`{"items": [
	 {"id": "cnry-item-o", "kind": "note", "text": "The %s open note %s.", "metadata": {"trust": 0.9, "importance": 0.9}}]}`, topic, o), http.StatusOK)
	h.itemIDs = append(h.itemIDs, "cnry-item-o")
	h.hide("cnry-item-o", o)
	mustCall(t, h.writer.base, keyGroup, "POST", "/v1/items", `{"items": [
	 {"id": "cnry-decoy-1", "kind": "note", "text": "The `+topic+` note of the probe tenant.", "metadata": {"trust": 0.9, "importance": 0.8}},
	 {"id": "cnry-decoy-2", "kind": "note", "text": "The `+topic+` restricted note, the probe tenant's own.", "metadata": {"trust": 0.9}}]}`, http.StatusOK)
	// The same id in both tenants: the seed tenant's cnry-decoy-1 now holds
	// a marker, and the probe tenant's is answered from its own store.
	s := newMarker("open")
	h.det.add(canary{kind: "item", class: "open", marker: s, what: sameIDCanary})
	mustCall(t, h.writer.base, keySeeder, "POST", "/v1/items", fmt.Sprintf(`{"items": [
	 {"id": "cnry-decoy-1", "kind": "note", "text": "The %s decoy of the seed tenant %s.", "metadata": {"trust": 0.9, "importance": 0.8}}]}`, topic, s), http.StatusOK)
	h.itemIDs = append(h.itemIDs, "cnry-decoy-1")
}

// tenantReadPaths are the surfaces of the read paths a tenant must never
// reach another's data through.
var tenantReadPaths = []string{"context-pack", "a2a-envelope", "a2a-rpc", "mcp", "trace-search", "trace-get", "prefetch",
	"escalation", "subscribe", "memory", "rag", "bridge", "console", "items-get", "decision-traces", "jobs"}

// sameIDCanary names the canary in an id both tenants hold.
const sameIDCanary = "another tenant's item under an id the probe tenant holds too"

// TestCanaryTenantsSQLite: the harness across tenants on the embedded
// store, with the CLI reads of H4R_TENANT.
func TestCanaryTenantsSQLite(t *testing.T) {
	h := runHarness(t, tenantCanaryVars(t, t.TempDir(), "", probeTenant), 1, canarySurfaces(), nil)
	cleanTenantStreams(t, h)
	h.probeCLI()
	report(t, h)
}

// TestCanaryTenantsPostgres: the same over Postgres, each tenant a schema
// and role of its own, with two replicas: seeding through A, every probe on
// A and on B, whose caches and statistics of each tenant fill on their own.
func TestCanaryTenantsPostgres(t *testing.T) {
	url := pgtest.Schema(t, "h4r_canary")
	h := runHarness(t, tenantCanaryVars(t, t.TempDir(), url, probeTenant), 2, canarySurfaces(), nil)
	cleanTenantStreams(t, h)
	h.probeCLI()
	report(t, h)
}

// cleanTenantStreams deletes the tenants' trace streams when the test
// ends (runHarness deletes the default tenant's).
func cleanTenantStreams(t *testing.T, h *harness) {
	if !h.nats || os.Getenv(natstest.Var) == "" {
		return
	}
	t.Cleanup(func() {
		if js, err := jetstream.New(natstest.Connect(t)); err == nil {
			for _, name := range []string{probeTenant, seedTenant} {
				_ = js.DeleteStream(context.Background(), h.vars["H4R_TRACE_STREAM"]+"_"+name)
			}
		}
	})
}

// TestCanaryTenantsDetectsASharedTenant is the harness's own control:
// with the probe keys in the seed tenant, as a router that sent every key
// to one tenant would have them, the other tenant's open item is found.
func TestCanaryTenantsDetectsASharedTenant(t *testing.T) {
	h := runHarness(t, tenantCanaryVars(t, t.TempDir(), "", seedTenant), 1, canarySurfaces(), nil)
	cleanTenantStreams(t, h)
	surfaces := map[string]bool{}
	for _, f := range h.det.all() {
		if f.c.class == "open" {
			surfaces[f.surface] = true
		}
	}
	for _, want := range []string{"context-pack", "mcp", "items-get"} {
		if !surfaces[want] {
			t.Errorf("the open canary of the probes' own tenant was not reported on %s: the harness would miss a tenant leak there (reported on %v)", want, surfaces)
		}
	}
	sameID := false
	anyClass := map[string]bool{}
	for _, f := range h.det.all() {
		sameID = sameID || (f.surface == "items-get" && f.c.what == sameIDCanary)
		anyClass[f.surface] = true
	}
	// Every read path's probe sees the other tenant's data when the two
	// are one: a probe that saw nothing here would prove nothing there.
	for _, want := range tenantReadPaths {
		if !anyClass[want] {
			t.Errorf("no canary of the probes' own tenant was reported on %s: the harness would miss a tenant leak there (reported on %v)", want, anyClass)
		}
	}
	if !sameID {
		t.Errorf("the item under an id both tenants hold was not reported on items-get when both were one tenant: the harness would miss the other tenant's copy of a shared id")
	}
}
