//go:build unix

package scaleout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// proc is a child process that can be killed and started again with the
// same arguments; its output is appended to one log file across starts.
type proc struct {
	name    string
	path    string
	args    []string
	env     []string
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{}
	err     error // the exit status, once exited is closed
}

func (p *proc) start() error {
	f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("opening the log of %s: %w", p.name, err)
	}
	cmd := exec.Command(p.path, p.args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = p.env, f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("starting %s: %w", p.name, err)
	}
	p.cmd, p.exited = cmd, make(chan struct{})
	go func(exited chan struct{}) {
		p.err = cmd.Wait()
		f.Close()
		close(exited)
	}(p.exited)
	return nil
}

func (p *proc) running() bool {
	if p.exited == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL and waits until the process is gone.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("killing %s: %v", p.name, err)
	}
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not die within 30 s of SIGKILL", p.name)
	}
	var exit *exec.ExitError
	if !errors.As(p.err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("%s was not ended by SIGKILL: %v", p.name, p.err)
	}
}

// stop kills the process if it still runs (test cleanup).
func (p *proc) stop() {
	if p.running() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// tail returns the end of the process's log, for failure messages.
func (p *proc) tail() string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return err.Error()
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// freePort returns a loopback port nobody listens on (a moment ago).
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// natsNode is one nats-server of the cluster.
type natsNode struct {
	proc
	url string
}

// startNATSCluster starts n nats-servers with JetStream, each with its own
// store directory, joined by cluster routes on loopback.
func startNATSCluster(t *testing.T, dir string, n int) []*natsNode {
	t.Helper()
	const server = "/usr/sbin/nats-server"
	if _, err := os.Stat(server); err != nil {
		t.Skipf("the scale-out test needs %s: %v", server, err)
	}
	clientPorts, routePorts := make([]int, n), make([]int, n)
	var routes []string
	for i := range n {
		clientPorts[i], routePorts[i] = freePort(t), freePort(t)
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", routePorts[i]))
	}
	nodes := make([]*natsNode, n)
	for i := range n {
		name := fmt.Sprintf("n%d", i+1)
		conf := fmt.Sprintf(`server_name: %s
listen: 127.0.0.1:%d
jetstream {
  store_dir: %q
  max_memory_store: 64MB
  max_file_store: 1GB
}
cluster {
  name: h4r_scaleout
  listen: 127.0.0.1:%d
  routes: [%s]
}
`, name, clientPorts[i], filepath.Join(dir, name), routePorts[i], strings.Join(routes, ", "))
		confPath := filepath.Join(dir, name+".conf")
		if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		nodes[i] = &natsNode{
			proc: proc{name: "nats " + name, path: server, args: []string{"-c", confPath},
				logPath: filepath.Join(dir, name+".log")},
			url: fmt.Sprintf("nats://127.0.0.1:%d", clientPorts[i]),
		}
		if err := nodes[i].start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nodes[i].stop)
	}
	return nodes
}

// natsURLs lists every node's URL, as NATS_URL takes them.
func natsURLs(nodes []*natsNode) string {
	var urls []string
	for _, n := range nodes {
		urls = append(urls, n.url)
	}
	return strings.Join(urls, ",")
}

// connectNATS connects to the cluster; the connection follows it across
// node deaths.
func connectNATS(t *testing.T, urls string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(urls, nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond),
		nats.RetryOnFailedConnect(true))
	if err != nil {
		t.Fatalf("connecting to the NATS cluster %s: %v", urls, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// h4rNode is one `h4r serve` replica on a fixed loopback port, so that a
// restart serves at the same address.
type h4rNode struct {
	proc
	base string
}

func startH4R(t *testing.T, bin, dir string, i int, env []string) *h4rNode {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	name := fmt.Sprintf("h4r%d", i+1)
	dataDir := filepath.Join(dir, name)
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	n := &h4rNode{
		proc: proc{name: name, path: bin, args: []string{"serve", "--addr", addr},
			env:     append([]string{"H4R_DATA_DIR=" + dataDir}, env...),
			logPath: filepath.Join(dir, name+".log")},
		base: "http://" + addr,
	}
	if err := n.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.stop)
	return n
}

// waitReady waits until the replica answers /health/ready with 200 (store
// and NATS checks pass) and returns how long that took.
func (n *h4rNode) waitReady(t *testing.T, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	c := &http.Client{Timeout: 2 * time.Second}
	for time.Since(start) < within {
		if !n.running() {
			t.Fatalf("%s exited before it was ready: %v\n%s", n.name, n.err, n.tail())
		}
		res, err := c.Get(n.base + "/health/ready")
		if err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return time.Since(start)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s was not ready within %s:\n%s", n.name, within, n.tail())
	return 0
}

// buildH4R builds the h4r binary into dir.
func buildH4R(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "h4r")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/h4r/h4r/cmd/h4r")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build -o %s ./cmd/h4r: %v\n%s", bin, err, out)
	}
	return bin
}
