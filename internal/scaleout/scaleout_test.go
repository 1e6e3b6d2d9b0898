//go:build unix

package scaleout

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/h4r/h4r/auth"
	"github.com/h4r/h4r/internal/pgtest"
)

// EnableVar turns the scale-out test on; it is too long and too heavy for
// the race step, and CI runs it in a step of its own.
const EnableVar = "H4R_SCALEOUT"

// The load's shape: paced so that three replicas, three NATS servers and
// Postgres share two cores with room to spare; the figures are what this
// load achieved, not a capacity.
const (
	loadFor         = 60 * time.Second
	killReplicaAt   = 12 * time.Second
	killNATSAt      = 32 * time.Second
	downFor         = 3 * time.Second
	tracePace       = 40 * time.Millisecond // one publish at a time, at most 25 a second
	ingestWorkers   = 2
	ingestBatch     = 5
	ingestPause     = 50 * time.Millisecond
	packReaders     = 2
	packPause       = 20 * time.Millisecond
	deletePace      = 400 * time.Millisecond
	drainWithin     = 150 * time.Second // covers the consumer's 30 s ack wait after the replica's kill
	readyWithin     = 2 * time.Minute
	requestDeadline = 30 * time.Second
	// publishDeadline and probeDeadline are short so that the publish gap
	// and the NATS server's recovery are measured to within a second, not
	// to a timeout: a retried publish is safe (its message id) and a probe
	// is asked again.
	publishDeadline = time.Second
	probeDeadline   = time.Second
)

// TestScaleOut runs H4R as it is deployed to scale out: three replicas
// over one Postgres database and a three-node JetStream cluster whose
// trace stream is replicated three times. Under steady trace publishing,
// item ingest, deletes and context packs, it kills one NATS server (the
// stream's leader) and one replica with SIGKILL and restarts them, then
// checks that every trace JetStream acknowledged was stored once, that
// every item a replica acknowledged is readable from every replica, and
// that no pack from any replica held an item after its delete was
// acknowledged.
func TestScaleOut(t *testing.T) {
	if os.Getenv(EnableVar) != "1" {
		t.Skipf("the scale-out test runs only with %s=1 (it takes minutes: docs/operations.md, Scale-out)", EnableVar)
	}
	dsn := pgtest.Schema(t, "h4r_scaleout")
	dir := t.TempDir()
	bin := buildH4R(t, dir)
	run := randomHex(t, 4)

	// NATS: three servers, one cluster, the stream at R3. H4R creates a
	// missing stream with one replica; an operator creates it replicated,
	// as here, before the replicas start.
	nodes := startNATSCluster(t, dir, 3)
	urls := natsURLs(nodes)
	_, js := connectNATS(t, urls)
	stream, subject := "SCALEOUT_"+strings.ToUpper(run), "scaleout."+run+".trace.commit"
	const durable = "h4r-traces"
	createStream(t, js, jetstream.StreamConfig{Name: stream, Subjects: []string{subject},
		Storage: jetstream.FileStorage, Replicas: 3, Duplicates: 5 * time.Minute})

	// H4R: three replicas with API keys.
	key := "scaleout-" + randomHex(t, 16)
	keysFile := filepath.Join(dir, "keys.json")
	keys := fmt.Sprintf(`[{"sha256": %q, "principal": {"id": "scaleout", "type": "specialist", "securityLevel": "internal"},
		"routes": ["read", "ingest", "admin"], "rateLimitPerMinute": 1000000}]`, auth.Hash(key))
	if err := os.WriteFile(keysFile, []byte(keys), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"DATABASE_URL=" + dsn, "NATS_URL=" + urls, "H4R_TRACE_STREAM=" + stream,
		"H4R_TRACE_SUBJECT=" + subject, "H4R_LANDED_SUBJECT=scaleout." + run + ".event.landed",
		"H4R_TRACE_DURABLE=" + durable, "H4R_API_KEYS_FILE=" + keysFile,
		"H4R_LOG_FORMAT=json", "H4R_LOG_LEVEL=info", "H4R_WRITE_TIMEOUT=60s", "H4R_REQUEST_TIMEOUT=60s",
		"H4R_GENERATOR_TIMEOUT=30s", "H4R_SHUTDOWN_GRACE=5s", "H4R_ITEM_CACHE_MB=32", "H4R_PG_MAX_READ_CONNS=4",
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + os.TempDir()}
	replicas := make([]*h4rNode, 3)
	for i := range replicas {
		replicas[i] = startH4R(t, bin, dir, i, env)
	}
	for _, r := range replicas {
		r.waitReady(t, readyWithin)
	}
	cl := &h4rClient{key: key, http: &http.Client{Timeout: requestDeadline}}

	tmpl, err := os.ReadFile("../../trace/testdata/trace.json")
	if err != nil {
		t.Fatal(err)
	}
	ld := &load{run: run, js: js, subject: subject, trace: tmpl, replicas: replicas, cl: cl,
		items: map[string]string{}, deleted: map[string]time.Time{}, unsure: map[string]bool{}, pubAt: map[string]time.Time{}}

	ctx, stopLoad := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	start := time.Now()
	wg.Go(func() { ld.publishTraces(ctx) })
	for w := range ingestWorkers {
		wg.Go(func() { ld.ingest(ctx, w) })
	}
	for range packReaders {
		wg.Go(func() { ld.readPacks(ctx) })
	}
	wg.Go(func() { ld.deleteItems(ctx) })

	// The replica: SIGKILL, down a moment, restarted at the same address.
	sleepUntil(start.Add(killReplicaAt))
	victim := replicas[1]
	victim.kill(t)
	time.Sleep(downFor)
	if err := victim.start(); err != nil {
		t.Fatal(err)
	}
	replicaRecovery := victim.waitReady(t, readyWithin)

	// The NATS node that leads the stream: SIGKILL, down, restarted; it has
	// recovered when the stream and the consumer count it current again.
	sleepUntil(start.Add(killNATSAt))
	leader := streamLeader(t, js, stream)
	var node *natsNode
	for _, n := range nodes {
		if n.name == "nats "+leader {
			node = n
		}
	}
	if node == nil {
		t.Fatalf("the stream's leader %q is none of the nodes", leader)
	}
	node.kill(t)
	time.Sleep(downFor)
	restarted := time.Now()
	if err := node.start(); err != nil {
		t.Fatal(err)
	}
	natsRecovery := waitCurrent(t, js, stream, durable, leader, restarted)

	sleepUntil(start.Add(loadFor))
	stopLoad()
	wg.Wait()
	loadTime := time.Since(start)

	// Every trace JetStream acknowledged must reach the store; the
	// consumer has nothing left pending.
	db := connectDB(t, dsn)
	ackedTraces := ld.ackedTraces()
	drainStart := time.Now()
	var stored map[string]int
	for {
		stored = storedTraces(t, db)
		missing := 0
		for _, id := range ackedTraces {
			if stored[id] == 0 {
				missing++
			}
		}
		if missing == 0 && consumerDone(t, js, stream, durable) {
			break
		}
		if time.Since(drainStart) > drainWithin {
			t.Fatalf("%d of %d acknowledged traces not stored within %s of the load's end", missing, len(ackedTraces), drainWithin)
		}
		time.Sleep(250 * time.Millisecond)
	}
	drained := time.Since(start)

	// Exactly once: one item per acknowledged trace, none that was never
	// published, and each trace's two decisions once.
	published := ld.publishedTraces()
	for id := range stored {
		if !published[id] {
			t.Errorf("trace %s is in the store but was never published", id)
		}
	}
	for _, id := range ackedTraces {
		if n := countRows(t, db, `SELECT count(*) FROM items WHERE id = $1`, id); n != 1 {
			t.Errorf("acknowledged trace %s: %d rows, want 1", id, n)
		}
	}
	if n, want := countRows(t, db, `SELECT count(*) FROM items WHERE kind = 'decision'`), 2*len(stored); n != want {
		t.Errorf("%d decision items, want %d (two per stored trace)", n, want)
	}
	// Where the traces handled more than once were published, as offsets
	// from the start of the load: which fault redelivered them.
	redelivered, firstRedelivered, lastRedelivered := 0, time.Duration(math.MaxInt64), time.Duration(0)
	for id, v := range stored {
		if v > 1 {
			redelivered++
			at := ld.publishedAt(id).Sub(start)
			firstRedelivered, lastRedelivered = min(firstRedelivered, at), max(lastRedelivered, at)
		}
	}
	redeliveredSpan := ""
	if redelivered > 0 {
		redeliveredSpan = fmt.Sprintf(" (published %s to %s into the load)", firstRedelivered.Round(time.Second/10), lastRedelivered.Round(time.Second/10))
	}

	// Every acknowledged item readable from every replica; every deleted
	// one gone from every replica.
	live, gone := ld.finalItems()
	readErrs := checkReads(cl, replicas, live, http.StatusOK)
	readErrs = append(readErrs, checkReads(cl, replicas, gone, http.StatusNotFound)...)
	for i, e := range readErrs {
		if i == 20 {
			t.Errorf("… and %d more", len(readErrs)-20)
			break
		}
		t.Error(e)
	}

	ld.mu.Lock()
	defer ld.mu.Unlock()
	for i, v := range ld.violations {
		if i == 20 {
			t.Errorf("… and %d more", len(ld.violations)-20)
			break
		}
		t.Error(v)
	}
	if ld.deletes == 0 || ld.deleteChecks == 0 {
		t.Errorf("%d deletes acknowledged and %d packs checked after them: the delete check did not run", ld.deletes, ld.deleteChecks)
	}
	if ld.foundBeforeDelete == 0 {
		t.Errorf("no item was found by its word before its delete: the packs after deletes prove nothing")
	}
	secs := loadTime.Seconds()
	t.Logf("load: %s; drained (all acknowledged traces stored, consumer empty) %s after the start", loadTime.Round(time.Millisecond), drained.Round(time.Millisecond))
	t.Logf("traces: %d acknowledged by JetStream (%.1f/s), %d stored (%.1f/s end to end), %d handled more than once%s (redelivered, one copy kept), longest gap between publish acks %s",
		len(ackedTraces), float64(len(ackedTraces))/secs, len(stored), float64(len(stored))/drained.Seconds(), redelivered, redeliveredSpan, ld.maxAckGap.Round(time.Millisecond))
	t.Logf("faults: replica killed %s and NATS server killed %s into the load", killReplicaAt, killNATSAt)
	t.Logf("items: %d acknowledged (%.1f/s), %d deleted, %d with a delete that got no answer (not read); %d reads from 3 replicas checked",
		len(live)+len(gone)+len(ld.unsure), float64(len(live)+len(gone)+len(ld.unsure))/secs, len(gone), len(ld.unsure), 3*(len(live)+len(gone)))
	t.Logf("packs: %d answered (%.1f/s), %d packs checked for deleted items (%d items found by their word before the delete), %d violations",
		ld.packs, float64(ld.packs)/secs, ld.deleteChecks, ld.foundBeforeDelete, len(ld.violations))
	t.Logf("requests refused or failed while a process was down: %d ingest, %d pack, %d publish retries", ld.ingestErrs, ld.packErrs, ld.publishRetries)
	t.Logf("recovery: replica %s ready %s after its restart; NATS node %s (stream leader) current in stream and consumer %s after its restart",
		victim.name, replicaRecovery.Round(time.Millisecond), leader, natsRecovery.Round(time.Millisecond))
}

// load drives the replicas and records what was acknowledged.
type load struct {
	run      string
	js       jetstream.JetStream
	subject  string
	trace    []byte
	replicas []*h4rNode
	cl       *h4rClient
	next     atomic.Uint64 // round robin over replicas

	mu        sync.Mutex
	published []string             // trace item ids, in order of publishing
	pubAt     map[string]time.Time // trace item id → when it was first published
	acked     int                  // the first acked of published were acknowledged
	lastAck   time.Time            //
	maxAckGap time.Duration        // longest time between two publish acks
	items     map[string]string    // acknowledged item id → its unique word
	order     []string             // acknowledged item ids, in order
	deleted   map[string]time.Time // item id → when its delete was acknowledged
	// unsure holds items whose delete got no answer (the replica killed
	// after its commit, or the load's end cancelling the request): the
	// delete may have taken effect, so the final reads check neither way.
	unsure      map[string]bool
	deleteOrder []string
	violations  []string
	packs       int
	deletes     int
	// deleteChecks counts packs asked for a deleted item's word after the
	// delete was acknowledged; foundBeforeDelete, items that such a pack
	// found before the delete (the query would find them).
	deleteChecks, foundBeforeDelete      int
	ingestErrs, packErrs, publishRetries int
}

// replica returns the next replica, round robin.
func (l *load) replica() *h4rNode {
	return l.replicas[int(l.next.Add(1)%uint64(len(l.replicas)))]
}

// publishTraces publishes traces one at a time, each with its own sha and
// message id, and retries one until JetStream acknowledges it (the message
// id makes a retry of a stored message a duplicate the stream drops).
func (l *load) publishTraces(ctx context.Context) {
	var tr map[string]any
	if err := json.Unmarshal(l.trace, &tr); err != nil {
		l.fail("decoding the trace fixture: %v", err)
		return
	}
	tick := time.NewTicker(tracePace)
	defer tick.Stop()
	for i := 0; ctx.Err() == nil; i++ {
		sha := fmt.Sprintf("%08s%032x", l.run, i+1)
		tr["sha"] = sha
		body, err := json.Marshal(tr)
		if err != nil {
			l.fail("encoding a trace: %v", err)
			return
		}
		id := "acme/gateway@" + sha
		l.mu.Lock()
		l.published = append(l.published, id)
		l.pubAt[id] = time.Now()
		l.mu.Unlock()
		for ctx.Err() == nil {
			pctx, cancel := context.WithTimeout(ctx, publishDeadline)
			_, err := l.js.Publish(pctx, l.subject, body, jetstream.WithMsgID(sha))
			cancel()
			if err == nil {
				now := time.Now()
				l.mu.Lock()
				l.acked++
				if !l.lastAck.IsZero() {
					l.maxAckGap = max(l.maxAckGap, now.Sub(l.lastAck))
				}
				l.lastAck = now
				l.mu.Unlock()
				break
			}
			l.mu.Lock()
			l.publishRetries++
			l.mu.Unlock()
			time.Sleep(100 * time.Millisecond)
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}

// ackedTraces returns the item ids of the traces JetStream acknowledged.
func (l *load) ackedTraces() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.published[:l.acked])
}

// publishedAt returns when a trace was first published.
func (l *load) publishedAt(id string) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pubAt[id]
}

// publishedTraces returns every trace id published, acknowledged or not.
func (l *load) publishedTraces() map[string]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]bool, len(l.published))
	for _, id := range l.published {
		out[id] = true
	}
	return out
}

// ingest posts batches of items, each with a word of its own, round robin.
func (l *load) ingest(ctx context.Context, worker int) {
	for b := 0; ctx.Err() == nil; b++ {
		words := map[string]string{}
		var items []string
		for i := range ingestBatch {
			id := fmt.Sprintf("so-%s-w%d-b%d-%d", l.run, worker, b, i)
			word := fmt.Sprintf("zq%sw%db%di%d", l.run, worker, b, i)
			words[id] = word
			items = append(items, fmt.Sprintf(`{"id": %q, "text": "scale-out note %s about the checkout retry budget", "metadata": {"importance": 0.6}}`, id, word))
		}
		var ack struct{ IDs []string }
		status, err := l.cl.do(ctx, l.replica(), http.MethodPost, "/v1/items", `{"items": [`+strings.Join(items, ",")+`]}`, &ack)
		l.mu.Lock()
		switch {
		case err != nil || status != http.StatusOK:
			if ctx.Err() == nil {
				l.ingestErrs++
			}
		default:
			for _, id := range ack.IDs {
				if words[id] == "" {
					l.violations = append(l.violations, fmt.Sprintf("ingest acknowledged id %s it was not sent", id))
					continue
				}
				l.items[id] = words[id]
				l.order = append(l.order, id)
			}
		}
		l.mu.Unlock()
		sleep(ctx, ingestPause)
	}
}

// readPacks asks random replicas for packs on the words of acknowledged
// and of deleted items; a pack must never hold an item whose delete was
// acknowledged before the pack was asked for.
func (l *load) readPacks(ctx context.Context) {
	for i := 0; ctx.Err() == nil; i++ {
		l.mu.Lock()
		var word string
		switch {
		case i%2 == 0 && len(l.deleteOrder) > 0:
			word = l.items[l.deleteOrder[len(l.deleteOrder)-1-i/2%len(l.deleteOrder)]]
		case len(l.order) > 0:
			word = l.items[l.order[len(l.order)-1-i%len(l.order)]]
		}
		l.mu.Unlock()
		if word == "" {
			sleep(ctx, packPause)
			continue
		}
		r := l.replica()
		asked := time.Now()
		ids, err := l.cl.pack(ctx, r, word)
		l.mu.Lock()
		if err != nil {
			if ctx.Err() == nil {
				l.packErrs++
			}
		} else {
			l.packs++
			l.checkPack(r, ids, asked)
		}
		l.mu.Unlock()
		sleep(ctx, packPause)
	}
}

// checkPack records a violation for every id in a pack asked for at asked
// whose delete was acknowledged before then. l.mu is held.
func (l *load) checkPack(r *h4rNode, ids []string, asked time.Time) {
	for _, id := range ids {
		if at, ok := l.deleted[id]; ok && at.Before(asked) {
			l.violations = append(l.violations, fmt.Sprintf("a pack from %s asked %s after the delete of %s was acknowledged holds it",
				r.name, asked.Sub(at).Round(time.Microsecond), id))
		}
	}
}

// deleteItems deletes the oldest acknowledged items one at a time through
// a replica, round robin, and as soon as a delete is acknowledged asks
// every replica for a pack on the item's word.
func (l *load) deleteItems(ctx context.Context) {
	for ctx.Err() == nil {
		sleep(ctx, deletePace)
		l.mu.Lock()
		var id, word string
		for _, cand := range l.order {
			if _, done := l.deleted[cand]; !done && !l.unsure[cand] {
				id, word = cand, l.items[cand]
				break
			}
		}
		l.mu.Unlock()
		if id == "" {
			continue
		}
		// Before: the word finds the item (else the checks after prove
		// nothing).
		r := l.replica()
		if ids, err := l.cl.pack(ctx, r, word); err == nil && slices.Contains(ids, id) {
			l.mu.Lock()
			l.foundBeforeDelete++
			l.mu.Unlock()
		}
		r = l.replica()
		status, err := l.cl.do(ctx, r, http.MethodDelete, "/v1/items/"+id, "", nil)
		if err != nil || status != http.StatusNoContent {
			l.mu.Lock()
			if ctx.Err() == nil {
				l.ingestErrs++
			}
			if err != nil {
				l.unsure[id] = true
			}
			l.mu.Unlock()
			continue
		}
		at := time.Now()
		l.mu.Lock()
		l.deleted[id] = at
		l.deleteOrder = append(l.deleteOrder, id)
		l.deletes++
		l.mu.Unlock()
		for _, rr := range l.replicas {
			asked := time.Now()
			ids, err := l.cl.pack(ctx, rr, word)
			if err != nil {
				continue // a replica that is down serves nothing
			}
			l.mu.Lock()
			l.deleteChecks++
			l.packs++
			l.checkPack(rr, ids, asked)
			l.mu.Unlock()
		}
	}
}

// finalItems splits the acknowledged items into those still live and
// those deleted, leaving out those whose delete got no answer.
func (l *load) finalItems() (live, gone []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range l.order {
		if _, ok := l.deleted[id]; ok {
			gone = append(gone, id)
		} else if !l.unsure[id] {
			live = append(live, id)
		}
	}
	return live, gone
}

func (l *load) fail(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.violations = append(l.violations, fmt.Sprintf(format, args...))
}

// h4rClient calls a replica with the API key.
type h4rClient struct {
	key  string
	http *http.Client
}

// do sends a request and decodes a 2xx answer into out (when not nil).
func (c *h4rClient) do(ctx context.Context, r *h4rNode, method, path, body string, out any) (int, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.base+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return res.StatusCode, fmt.Errorf("reading the answer of %s %s: %w", method, path, err)
	}
	if out != nil && res.StatusCode/100 == 2 {
		if err := json.Unmarshal(b, out); err != nil {
			return res.StatusCode, fmt.Errorf("decoding the answer of %s %s: %w", method, path, err)
		}
	}
	return res.StatusCode, nil
}

// pack asks a replica for a context pack on word and returns its ids.
func (c *h4rClient) pack(ctx context.Context, r *h4rNode, word string) ([]string, error) {
	var pack struct {
		Results []struct {
			ID string `json:"id"`
		} `json:"results"`
	}
	status, err := c.do(ctx, r, http.MethodPost, "/v1/context-pack", fmt.Sprintf(`{"query": {"text": %q}, "limit": 5}`, word), &pack)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("context pack from %s: status %d", r.name, status)
	}
	ids := make([]string, len(pack.Results))
	for i, res := range pack.Results {
		ids[i] = res.ID
	}
	return ids, nil
}

// checkReads reads every id from every replica and returns a line for
// every answer that is not want.
func checkReads(c *h4rClient, replicas []*h4rNode, ids []string, want int) []string {
	var (
		mu   sync.Mutex
		errs []string
		wg   sync.WaitGroup
	)
	work := make(chan string)
	for range 4 {
		wg.Go(func() {
			for id := range work {
				for _, r := range replicas {
					status, err := c.do(context.Background(), r, http.MethodGet, "/v1/items/"+id, "", nil)
					if err != nil || status != want {
						mu.Lock()
						errs = append(errs, fmt.Sprintf("GET /v1/items/%s from %s: status %d (%v), want %d", id, r.name, status, err, want))
						mu.Unlock()
					}
				}
			}
		})
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
	return errs
}

// createStream creates the stream once the cluster has elected its meta
// leader and every peer joined (R3 needs all three).
func createStream(t *testing.T, js jetstream.JetStream, cfg jetstream.StreamConfig) {
	t.Helper()
	deadline := time.Now().Add(readyWithin)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := js.CreateStream(ctx, cfg)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("creating stream %s (R%d) on the cluster: %v", cfg.Name, cfg.Replicas, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// streamLeader returns the server name of the stream's leader.
func streamLeader(t *testing.T, js jetstream.JetStream, stream string) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		info, err := streamInfo(js, stream)
		if err == nil && info.Cluster != nil && info.Cluster.Leader != "" {
			return info.Cluster.Leader
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stream %s has no leader: %v", stream, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func streamInfo(js jetstream.JetStream, stream string) (*jetstream.StreamInfo, error) {
	ctx, cancel := context.WithTimeout(context.Background(), probeDeadline)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return nil, err
	}
	return s.Info(ctx)
}

func consumerInfo(js jetstream.JetStream, stream, durable string) (*jetstream.ConsumerInfo, error) {
	ctx, cancel := context.WithTimeout(context.Background(), probeDeadline)
	defer cancel()
	c, err := js.Consumer(ctx, stream, durable)
	if err != nil {
		return nil, err
	}
	return c.Info(ctx)
}

// currentIn reports whether server is the leader of a cluster or one of
// its replicas that is online and caught up.
func currentIn(ci *jetstream.ClusterInfo, server string) bool {
	if ci == nil {
		return false
	}
	if ci.Leader == server {
		return true
	}
	for _, p := range ci.Replicas {
		if p.Name == server && p.Current && !p.Offline {
			return true
		}
	}
	return false
}

// waitCurrent waits until the restarted server is current in both the
// stream's and the consumer's group and returns the time since restarted.
func waitCurrent(t *testing.T, js jetstream.JetStream, stream, durable, server string, restarted time.Time) time.Duration {
	t.Helper()
	for time.Since(restarted) < readyWithin {
		si, err1 := streamInfo(js, stream)
		ci, err2 := consumerInfo(js, stream, durable)
		if err1 == nil && err2 == nil && currentIn(si.Cluster, server) && currentIn(ci.Cluster, server) {
			return time.Since(restarted)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("NATS node %s was not current in stream %s and consumer %s within %s of its restart", server, stream, durable, readyWithin)
	return 0
}

// consumerDone reports whether the durable consumer has every message
// delivered and acknowledged.
func consumerDone(t *testing.T, js jetstream.JetStream, stream, durable string) bool {
	t.Helper()
	ci, err := consumerInfo(js, stream, durable)
	if err != nil {
		return false
	}
	return ci.NumPending == 0 && ci.NumAckPending == 0
}

func connectDB(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connecting to the test database: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// storedTraces returns the stored trace items' ids with their versions
// (a version above 1: the trace was handled more than once).
func storedTraces(t *testing.T, db *pgx.Conn) map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := db.Query(ctx, `SELECT id, version FROM items WHERE kind = 'commit_trace'`)
	if err != nil {
		t.Fatalf("reading the stored traces: %v", err)
	}
	out := map[string]int{}
	for rows.Next() {
		var id string
		var v int
		if err := rows.Scan(&id, &v); err != nil {
			t.Fatal(err)
		}
		out[id] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("reading the stored traces: %v", err)
	}
	return out
}

func countRows(t *testing.T, db *pgx.Conn, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func sleepUntil(at time.Time) { time.Sleep(time.Until(at)) }

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
