package natstest

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
)

// Var names the variable that holds the test NATS server's URL.
const Var = "H4R_TEST_NATS_URL"

// URL returns the test NATS server's URL. Without one, or when it does
// not answer, the test is skipped with a hint, except in CI (CI set),
// where the NATS tests must run: there both fail the test.
func URL(t testing.TB) string {
	t.Helper()
	url := os.Getenv(Var)
	inCI := os.Getenv("CI") != ""
	if url == "" {
		if inCI {
			t.Fatalf("%s is not set: CI must run the NATS tests (.ci/run sets it)", Var)
		}
		t.Skipf("NATS tests are off: set %s=nats://127.0.0.1:4222 (a server started with -js) to run them", Var)
	}
	nc, err := nats.Connect(url)
	if err != nil {
		if inCI {
			t.Fatalf("the test NATS server %s=%s is unreachable, and CI must run the NATS tests: %v", Var, url, err)
		}
		t.Skipf("the test NATS server %s=%s is unreachable (start nats-server -js, or unset %s): %v", Var, url, Var, err)
	}
	nc.Close()
	return url
}

// Connect connects to the test server; the connection closes when t ends.
func Connect(t testing.TB) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// Names returns a stream name and a subject prefix of t's own; the caller
// deletes the stream when it is done (Cleanup).
func Names(t testing.TB) (stream, subjectPrefix string) {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	id := hex.EncodeToString(b)
	return "T_" + strings.ToUpper(id), "test." + id
}
