package opatest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/plugins"
	opaserver "github.com/open-policy-agent/opa/v1/server"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
)

// Server is OPA's own server (v1/server), run in-process on loopback
// with the given modules: the real thing a remote deployment talks to.
type Server struct {
	URL     string
	srv     *opaserver.Server
	manager *plugins.Manager
	once    sync.Once
}

func Start(t testing.TB, modules map[string]string) *Server {
	t.Helper()
	ctx := context.Background()
	store := inmem.New()
	txn := storage.NewTransactionOrDie(ctx, store, storage.WriteParams)
	for name, src := range modules {
		if err := store.UpsertPolicy(ctx, txn, name, []byte(src)); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.Commit(ctx, txn); err != nil {
		t.Fatal(err)
	}
	m, err := plugins.New(nil, "h4r-test", store)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Init(ctx); err != nil {
		t.Fatal(err)
	}
	srv, err := opaserver.New().WithStore(store).WithManager(m).WithAddresses([]string{"127.0.0.1:0"}).Init(ctx)
	if err != nil {
		t.Fatal(err)
	}
	loops, err := srv.Listeners()
	if err != nil {
		t.Fatal(err)
	}
	for _, loop := range loops {
		go func() { _ = loop() }()
	}
	// The listeners bind in their loops: wait for the address.
	var addrs []string
	for deadline := time.Now().Add(10 * time.Second); len(addrs) == 0; addrs = srv.Addrs() {
		if time.Now().After(deadline) {
			t.Fatal("OPA did not start listening")
		}
		time.Sleep(5 * time.Millisecond)
	}
	o := &Server{URL: "http://" + addrs[0], srv: srv, manager: m}
	t.Cleanup(o.Stop)
	return o
}

// Stop shuts OPA down; later calls do nothing.
func (o *Server) Stop() {
	o.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = o.srv.Shutdown(ctx)
		o.manager.Stop(ctx)
	})
}
