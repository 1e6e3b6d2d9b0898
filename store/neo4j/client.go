package neo4j

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	driver "github.com/neo4j/neo4j-go-driver/v5/neo4j"
	drvconfig "github.com/neo4j/neo4j-go-driver/v5/neo4j/config"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/store/neo4j/internal/cypher"
)

// Defaults of the options.
const (
	DefaultBatchSize    = 500
	DefaultMaxPoolSize  = 50
	DefaultWriteTimeout = 5 * time.Second
	DefaultMaxReach     = 10000
)

// Option configures Open, NewGenerator and NewMirror; each reads the
// options that concern it.
type Option func(*options)

type options struct {
	user, password string
	database       string
	log            *slog.Logger
	poolSize       int
	batch          int
	linkTypes      []string
	primaryTimeout time.Duration
	maxReach       int
	writeTimeout   time.Duration
	minBackoff     time.Duration
	maxBackoff     time.Duration
	retryTime      *time.Duration
}

func newOptions(opts []Option) options {
	o := options{log: slog.New(slog.DiscardHandler), poolSize: DefaultMaxPoolSize, batch: DefaultBatchSize,
		maxReach: DefaultMaxReach, writeTimeout: DefaultWriteTimeout,
		minBackoff: 200 * time.Millisecond, maxBackoff: 30 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithAuth sets basic-auth credentials (NEO4J_USER, NEO4J_PASSWORD).
// Credentials in the URL (neo4j://user:password@host) take precedence;
// with neither, the driver connects without authentication.
func WithAuth(user, password string) Option {
	return func(o *options) { o.user, o.password = user, password }
}

// WithDatabase selects the database (NEO4J_DATABASE); empty means the
// server's default database.
func WithDatabase(name string) Option { return func(o *options) { o.database = name } }

// WithLogger sets the logger; the driver's own log goes to it too.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithMaxPoolSize bounds the driver's connection pool (default 50).
func WithMaxPoolSize(n int) Option { return func(o *options) { o.poolSize = n } }

// WithMaxRetryTime bounds how long the driver retries a transaction that
// failed with a transient or connection error (the driver's default is
// 30s; hop queries are bounded by their deadline anyway). 0 tries once.
func WithMaxRetryTime(d time.Duration) Option { return func(o *options) { o.retryTime = &d } }

// WithBatchSize sets how many items one write transaction mirrors
// (default 500, the store's ingest transaction size).
func WithBatchSize(n int) Option { return func(o *options) { o.batch = n } }

// WithLinkTypes makes hops follow only relationships of these types (link
// types, e.g. caused_by); by default every type is followed.
func WithLinkTypes(types ...string) Option {
	return func(o *options) { o.linkTypes = append([]string(nil), types...) }
}

// WithPrimaryTimeout bounds how long the generator waits for Neo4j before
// the store answers instead. By default Neo4j gets half of the time left on
// the request's context, so that the fallback has the other half.
func WithPrimaryTimeout(d time.Duration) Option { return func(o *options) { o.primaryTimeout = d } }

// WithMaxReach bounds how many reached items a filtered hop query fetches
// from Neo4j before filtering them (default 10000); a walk that reaches
// more is answered by the store, whose query filters as it walks.
func WithMaxReach(n int) Option { return func(o *options) { o.maxReach = n } }

// WithWriteTimeout bounds one mirror write (default 5s); a write that does
// not finish in time is retried later.
func WithWriteTimeout(d time.Duration) Option { return func(o *options) { o.writeTimeout = d } }

// WithRetryBackoff sets the first and the longest wait between retries of
// failed mirror writes (default 200ms, doubling up to 30s).
func WithRetryBackoff(first, longest time.Duration) Option {
	return func(o *options) { o.minBackoff, o.maxBackoff = first, longest }
}

// Client is a connection pool to one Neo4j database holding the item
// graph: one node (:Item {id, kind, present}) per item or link target, one
// relationship per link, typed by the link's type. It is safe for
// concurrent use.
type Client struct {
	driver   driver.DriverWithContext
	database string
	batch    int
	log      *slog.Logger
}

// Open connects to the Neo4j at rawURL (bolt://, neo4j://, and their +s and
// +ssc forms), checks that it answers, and creates the unique constraint on
// item ids if it does not exist. Errors never contain the password.
func Open(ctx context.Context, rawURL string, opts ...Option) (*Client, error) {
	o := newOptions(opts)
	target, auth, err := authFromURL(rawURL, o.user, o.password)
	if err != nil {
		return nil, err
	}
	drv, err := driver.NewDriverWithContext(target, auth, func(c *drvconfig.Config) {
		c.MaxConnectionPoolSize = o.poolSize
		c.Log = driverLog{o.log}
		if o.retryTime != nil {
			c.MaxTransactionRetryTime = *o.retryTime
		}
	})
	if err != nil {
		return nil, fmt.Errorf("neo4j %s: %w", target, err)
	}
	c := &Client{driver: drv, database: o.database, batch: max(o.batch, 1), log: o.log}
	if err := drv.VerifyConnectivity(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("neo4j %s does not answer: %w", target, err), drv.Close(context.WithoutCancel(ctx)))
	}
	if err := c.write(ctx, "schema", func(tx driver.ManagedTransaction) error {
		return run(ctx, tx, cypher.Constraint, nil)
	}); err != nil {
		return nil, errors.Join(fmt.Errorf("creating the unique constraint on item ids: %w", err), drv.Close(context.WithoutCancel(ctx)))
	}
	return c, nil
}

// authFromURL returns the URL without credentials and the auth token:
// from the URL's user information when it has some, else from user and
// password, else none.
func authFromURL(rawURL, user, password string) (string, driver.AuthToken, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		// url.Parse's error quotes the URL, password and all.
		return "", driver.AuthToken{}, fmt.Errorf("NEO4J_URL is not a URL of the form neo4j://host:7687")
	}
	if u.User != nil {
		user = u.User.Username()
		password, _ = u.User.Password()
		u.User = nil
	}
	if user == "" && password == "" {
		return u.String(), driver.NoAuth(), nil
	}
	return u.String(), driver.BasicAuth(user, password, ""), nil
}

// Close closes the pool.
func (c *Client) Close(ctx context.Context) error { return c.driver.Close(ctx) }

// Ping checks that the server answers.
func (c *Client) Ping(ctx context.Context) error { return c.driver.VerifyConnectivity(ctx) }

// txMetadata names H4R's transactions in Neo4j's transaction list and
// query log.
func txMetadata(op string) func(*driver.TransactionConfig) {
	return driver.WithTxMetadata(map[string]any{"app": "h4r", "op": op})
}

func (c *Client) session(ctx context.Context, mode driver.AccessMode) driver.SessionWithContext {
	return c.driver.NewSession(ctx, driver.SessionConfig{DatabaseName: c.database, AccessMode: mode})
}

// write runs fn in a write transaction, retried by the driver on transient
// errors until ctx ends.
func (c *Client) write(ctx context.Context, op string, fn func(tx driver.ManagedTransaction) error) error {
	s := c.session(ctx, driver.AccessModeWrite)
	defer s.Close(context.WithoutCancel(ctx))
	_, err := s.ExecuteWrite(ctx, func(tx driver.ManagedTransaction) (any, error) {
		return nil, fn(tx)
	}, txMetadata(op))
	return err
}

func run(ctx context.Context, tx driver.ManagedTransaction, query string, params map[string]any) error {
	res, err := tx.Run(ctx, query, params)
	if err != nil {
		return err
	}
	_, err = res.Consume(ctx)
	return err
}

// Upsert mirrors items: their nodes, and their links in place of the links
// they had. Link targets that are not items yet become nodes that hops do
// not pass through until the item arrives. Items are written in
// transactions of the batch size.
func (c *Client) Upsert(ctx context.Context, items []*h4r.Item) error {
	for start := 0; start < len(items); start += c.batch {
		batch := items[start:min(start+c.batch, len(items))]
		ids := make([]any, len(batch))
		nodes := make([]any, len(batch))
		var links []any
		for i, it := range batch {
			ids[i] = it.ID
			nodes[i] = map[string]any{"id": it.ID, "kind": it.Kind}
			for pos, l := range it.Links {
				links = append(links, map[string]any{"source": it.ID, "target": l.Target, "type": l.Type,
					"position": int64(pos), "strength": l.Strength, "targetType": l.TargetType, "context": l.Context})
			}
		}
		err := c.write(ctx, "mirror_upsert", func(tx driver.ManagedTransaction) error {
			if err := run(ctx, tx, cypher.DropLinks, map[string]any{"ids": ids}); err != nil {
				return err
			}
			if err := run(ctx, tx, cypher.MergeItems, map[string]any{"items": nodes}); err != nil {
				return err
			}
			if len(links) == 0 {
				return nil
			}
			return run(ctx, tx, cypher.CreateLinks, map[string]any{"links": links})
		})
		if err != nil {
			return fmt.Errorf("mirroring %d items to neo4j: %w", len(batch), err)
		}
	}
	return nil
}

// Delete mirrors the deletion of items: their links go; their nodes stay
// as link targets while other items link to them, and go otherwise.
func (c *Client) Delete(ctx context.Context, ids []string) error {
	for start := 0; start < len(ids); start += c.batch {
		batch := ids[start:min(start+c.batch, len(ids))]
		params := map[string]any{"ids": anySlice(batch)}
		err := c.write(ctx, "mirror_delete", func(tx driver.ManagedTransaction) error {
			for _, q := range []string{cypher.DropLinks, cypher.MarkDeleted, cypher.DropOrphans} {
				if err := run(ctx, tx, q, params); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("mirroring the deletion of %d items to neo4j: %w", len(batch), err)
		}
	}
	return nil
}

// Clear deletes every node and relationship of the item graph, a batch per
// transaction.
func (c *Client) Clear(ctx context.Context) error {
	for {
		var deleted int64
		err := c.write(ctx, "clear", func(tx driver.ManagedTransaction) error {
			res, err := tx.Run(ctx, cypher.ClearBatch, map[string]any{"batch": int64(c.batch)})
			if err != nil {
				return err
			}
			rec, err := res.Single(ctx)
			if err != nil {
				return err
			}
			n, _, err := driver.GetRecordValue[int64](rec, "deleted")
			deleted = n
			return err
		})
		if err != nil {
			return fmt.Errorf("clearing the neo4j graph: %w", err)
		}
		if deleted == 0 {
			return nil
		}
	}
}

// Count returns how many items (nodes the store holds) the graph has.
func (c *Client) Count(ctx context.Context) (int, error) {
	s := c.session(ctx, driver.AccessModeRead)
	defer s.Close(context.WithoutCancel(ctx))
	n, err := driver.ExecuteRead(ctx, s, func(tx driver.ManagedTransaction) (int64, error) {
		res, err := tx.Run(ctx, cypher.CountPresent, nil)
		if err != nil {
			return 0, err
		}
		rec, err := res.Single(ctx)
		if err != nil {
			return 0, err
		}
		n, _, err := driver.GetRecordValue[int64](rec, "items")
		return n, err
	}, txMetadata("count"))
	if err != nil {
		return 0, fmt.Errorf("counting the items of the neo4j graph: %w", err)
	}
	return int(n), nil
}

// HopQuery is a walk in the graph.
type HopQuery struct {
	Anchors  []string
	MaxHops  int      // 0 to cypher.MaxHops
	Directed bool     // follow relationships only in their direction
	Types    []string // follow only these types; empty: every type
	Targets  []string // return only these nodes; empty: every node
	Limit    int      // at most this many rows, nearest first
}

// Reach is a node a walk reached, at its smallest distance.
type Reach struct {
	ID       string
	Distance int
}

// Hops walks from the anchors and returns every item within q.MaxHops,
// nearest first, then by id.
func (c *Client) Hops(ctx context.Context, q HopQuery) ([]Reach, error) {
	if q.MaxHops < 0 || q.MaxHops > cypher.MaxHops {
		return nil, fmt.Errorf("neo4j hops: depth %d is outside [0, %d]", q.MaxHops, cypher.MaxHops)
	}
	var types, targets any // null: every type, every node
	if len(q.Types) > 0 {
		types = anySlice(q.Types)
	}
	if len(q.Targets) > 0 {
		targets = anySlice(q.Targets)
	}
	params := map[string]any{"anchors": anySlice(q.Anchors), "types": types, "targets": targets, "limit": int64(q.Limit)}
	s := c.session(ctx, driver.AccessModeRead)
	defer s.Close(context.WithoutCancel(ctx))
	out, err := driver.ExecuteRead(ctx, s, func(tx driver.ManagedTransaction) ([]Reach, error) {
		res, err := tx.Run(ctx, cypher.Hops(q.MaxHops, q.Directed), params)
		if err != nil {
			return nil, err
		}
		var out []Reach
		for res.Next(ctx) {
			rec := res.Record()
			id, _, err := driver.GetRecordValue[string](rec, "id")
			if err != nil {
				return nil, err
			}
			d, _, err := driver.GetRecordValue[int64](rec, "distance")
			if err != nil {
				return nil, err
			}
			out = append(out, Reach{ID: id, Distance: int(d)})
		}
		return out, res.Err()
	}, txMetadata("hops"))
	if err != nil {
		return nil, fmt.Errorf("neo4j hops from %d anchors: %w", len(q.Anchors), err)
	}
	return out, nil
}

func anySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// driverLog passes the driver's log to slog. The driver logs retried
// errors as errors; they are warnings here, since the caller sees the
// error that matters.
type driverLog struct{ l *slog.Logger }

func (d driverLog) Error(name, id string, err error) {
	d.l.Warn("neo4j driver", "component", name, "id", id, "error", err)
}
func (d driverLog) Warnf(name, id, msg string, args ...any) {
	d.l.Warn("neo4j driver: "+fmt.Sprintf(msg, args...), "component", name, "id", id)
}
func (d driverLog) Infof(name, id, msg string, args ...any)  { d.debug(name, id, msg, args) }
func (d driverLog) Debugf(name, id, msg string, args ...any) { d.debug(name, id, msg, args) }

// debug formats only when debug logging is on: the driver logs every
// connection and transaction at these levels.
func (d driverLog) debug(name, id, msg string, args []any) {
	if d.l.Enabled(context.Background(), slog.LevelDebug) {
		d.l.Debug("neo4j driver: "+fmt.Sprintf(msg, args...), "component", name, "id", id)
	}
}
