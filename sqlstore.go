package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// A TaskStore on database/sql, shared by the replicas of a server: any replica
// answers for any task, and a replica that dies leaves its running tasks failed
// once their lease expires (docs/explanation/contract.md, "Replicas"). The
// store names no driver: the application opens the *sql.DB with the driver of
// its choice. Its statements are PostgreSQL's dialect ($1 placeholders, BIGINT,
// TEXT, SELECT ... FOR UPDATE, UPDATE ... RETURNING), which PostgreSQL and the
// databases that speak its wire dialect accept. This file holds the options,
// the schema and its migrations; sqlstore_tasks.go the TaskStore methods;
// sqlstore_follow.go the watches, the change feed, the leases and the sweeper.

// Defaults of SQLTaskStoreOptions.
const (
	DefaultSQLTaskTable         = "mcp_tasks"
	DefaultSQLTaskLease         = 30 * time.Second
	DefaultSQLTaskPollInterval  = 500 * time.Millisecond
	DefaultSQLStatementTimeout  = 5 * time.Second
	sqlTaskStoreSchemaVersion   = 1
	sqlTaskStoreMigrateAttempts = 5
)

// SQLTaskStoreOptions configure NewSQLTaskStore. A zero value means the
// default (see Unlimited for the rule every options struct follows).
type SQLTaskStoreOptions struct {
	// DB is the database, opened by the application with its driver (and
	// its pool bounds: sql.DB.SetMaxOpenConns). Required; the store never
	// closes it.
	DB *sql.DB
	// Table names the tasks table (letters, digits and underscores; default
	// "mcp_tasks"); the store also keeps <Table>_schema (the schema's
	// version) and <Table>_state (the change counter). Replicas that share
	// tasks name the same table.
	Table string
	// Limits bound the tasks of all replicas together, counted in the
	// database (zero means the default of TaskOptions).
	Limits TaskLimits
	// Replica names this process in the database (the runner of the tasks
	// it runs, the author of its changes); default: the host name, the
	// process ID and random bits. Two live processes must not share one.
	Replica string
	// Lease is how long a task stays leased to the replica running it
	// without a renewal, default 30s. The replica renews its leases every
	// Lease/3; a replica that dies leaves its running tasks failed within
	// Lease plus Lease/3 (the sweep period) of its last renewal.
	Lease time.Duration
	// PollInterval is how often the store reads the database for changes
	// other replicas made (cancellations and answers for the tasks it runs,
	// status changes for listen streams), default 500ms. With a Notifier
	// a change is read as soon as it is announced.
	PollInterval time.Duration
	// StatementTimeout bounds each operation on the database, default 5s:
	// one that takes longer fails (the client gets a JSON-RPC error).
	StatementTimeout time.Duration
	// Notifier, when the database can announce changes (PostgreSQL's
	// LISTEN/NOTIFY), wakes the store of every replica at each change.
	Notifier SQLTaskNotifier
	// Logger receives the store's diagnostics (nil: slog.Default()).
	Logger *slog.Logger
}

// SQLTaskNotifier announces task changes between the replicas sharing a
// database, where the database can (database/sql has no LISTEN; a driver's
// own API has). It is optional: without it the replicas poll.
type SQLTaskNotifier interface {
	// Notify announces, within tx, that task id changed: the announcement
	// is delivered when (and only if) tx commits.
	Notify(ctx context.Context, tx *sql.Tx, id string) error
	// Listen calls changed for every announcement of any replica, until ctx
	// ends or the connection fails; it returns why it stopped. The store
	// calls it again after a failure.
	Listen(ctx context.Context, changed func(id string)) error
}

// validSQLTableName reports whether name may be a Table: it is written
// into statements, so only letters, digits and underscores, not starting
// with a digit, at most 41 bytes.
func validSQLTableName(name string) bool {
	if name == "" || len(name) > 41 || name[0] >= '0' && name[0] <= '9' {
		return false
	}
	for _, c := range []byte(name) {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// SQLTaskStore is a TaskStore on database/sql (see SQLTaskStoreOptions).
// Its methods are safe for concurrent use. Close stops its goroutines.
type SQLTaskStore struct {
	opts   SQLTaskStoreOptions
	db     *sql.DB
	q      sqlTaskStatements
	logger *slog.Logger
	now    func() time.Time // time.Now, but in tests

	stop   context.CancelFunc
	done   sync.WaitGroup
	wake   chan struct{} // a change was announced: read the database now
	follow sqlFollowers
}

// NewSQLTaskStore checks opts, creates or migrates the schema, and starts
// the store's goroutines (polling, lease renewal, the sweeper, the
// Notifier's listener). ctx bounds the migration only.
func NewSQLTaskStore(ctx context.Context, opts SQLTaskStoreOptions) (*SQLTaskStore, error) {
	return newSQLTaskStore(ctx, opts, time.Now)
}

// newSQLTaskStore is NewSQLTaskStore with a clock (tests set theirs).
func newSQLTaskStore(ctx context.Context, opts SQLTaskStoreOptions, now func() time.Time) (*SQLTaskStore, error) {
	if err := validateSQLTaskStoreOptions(&opts); err != nil {
		return nil, err
	}
	s := &SQLTaskStore{opts: opts, db: opts.DB, q: newSQLTaskStatements(opts.Table), logger: opts.Logger, now: now, wake: make(chan struct{}, 1)}
	s.follow.watches = map[int]*sqlWatch{}
	s.follow.feeds = map[int]func(*TaskRecord){}
	if err := s.migrate(ctx); err != nil {
		return nil, err
	}
	if err := s.startFollowing(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// validateSQLTaskStoreOptions checks o and fills in defaults. Its error
// names the first invalid field.
func validateSQLTaskStoreOptions(o *SQLTaskStoreOptions) error {
	if o.DB == nil {
		return errors.New("mcpstdio: SQLTaskStoreOptions.DB is required")
	}
	defaultTo(&o.Table, DefaultSQLTaskTable)
	if !validSQLTableName(o.Table) {
		return fmt.Errorf("mcpstdio: SQLTaskStoreOptions.Table %q: want letters, digits and underscores (at most 41), not starting with a digit", o.Table)
	}
	if err := checkOptions(
		o.Limits.normalize("SQLTaskStoreOptions.Limits"),
		checkOption("SQLTaskStoreOptions.Lease", o.Lease),
		checkOption("SQLTaskStoreOptions.PollInterval", o.PollInterval),
		checkOption("SQLTaskStoreOptions.StatementTimeout", o.StatementTimeout),
	); err != nil {
		return fmt.Errorf("mcpstdio: %w", err)
	}
	defaultTo(&o.Lease, DefaultSQLTaskLease)
	defaultTo(&o.PollInterval, DefaultSQLTaskPollInterval)
	defaultTo(&o.StatementTimeout, DefaultSQLStatementTimeout)
	if o.Replica == "" {
		o.Replica = defaultReplicaName()
	}
	if len(o.Replica) > 200 {
		return fmt.Errorf("mcpstdio: SQLTaskStoreOptions.Replica is %d bytes, at most 200", len(o.Replica))
	}
	o.Logger = defaultLogger(o.Logger)
	return nil
}

// defaultReplicaName is host-pid-random: unique among live processes, and
// a restarted process never takes over its predecessor's leases.
func defaultReplicaName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "replica"
	}
	b := make([]byte, 4)
	rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
}

// Replica returns the name this store writes as the runner of its tasks.
func (s *SQLTaskStore) Replica() string { return s.opts.Replica }

// Close stops the store's goroutines and waits for them. The tasks this
// replica runs are no longer renewed: other replicas fail them once their
// leases expire, unless they end first. Close does not close the DB.
func (s *SQLTaskStore) Close() error {
	s.stop()
	s.done.Wait()
	return nil
}

// op returns ctx bounded by the statement timeout.
func (s *SQLTaskStore) op(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.opts.StatementTimeout)
}

// sqlTaskMigrations are the schema's versions: migration i takes the schema
// from version i to i+1, in one transaction. Append; never edit one that
// shipped.
func sqlTaskMigrations(t string) [][]string {
	return [][]string{{
		`CREATE TABLE ` + t + ` (
			id TEXT PRIMARY KEY,
			owner TEXT NOT NULL,
			status TEXT NOT NULL,
			status_message TEXT NOT NULL,
			created_ms BIGINT NOT NULL,
			updated_ms BIGINT NOT NULL,
			expires_ms BIGINT NOT NULL,
			ttl_ms BIGINT NOT NULL,
			poll_interval_ms BIGINT NOT NULL,
			input_requests TEXT,
			answers TEXT,
			result TEXT,
			error TEXT,
			held BIGINT NOT NULL,
			size BIGINT NOT NULL,
			version BIGINT NOT NULL,
			runner TEXT NOT NULL,
			lease_until_ms BIGINT NOT NULL,
			seq BIGINT NOT NULL,
			changed_by TEXT NOT NULL
		)`,
		`CREATE INDEX ` + t + `_owner ON ` + t + ` (owner)`,
		`CREATE INDEX ` + t + `_expires ON ` + t + ` (expires_ms)`,
		`CREATE INDEX ` + t + `_seq ON ` + t + ` (seq)`,
		`CREATE INDEX ` + t + `_lease ON ` + t + ` (lease_until_ms)`,
		// The change counter, and the tasks and bytes of all tasks (the
		// limits in all are checked against these, not a COUNT).
		`CREATE TABLE ` + t + `_state (id INTEGER PRIMARY KEY, seq BIGINT NOT NULL, tasks BIGINT NOT NULL, bytes BIGINT NOT NULL)`,
		`INSERT INTO ` + t + `_state (id, seq, tasks, bytes) VALUES (1, 0, 0, 0)`,
	}}
}

// migrate brings the schema to sqlTaskStoreSchemaVersion. Replicas starting
// together serialize on the version row (SELECT ... FOR UPDATE); a race to
// create the version table itself is retried.
func (s *SQLTaskStore) migrate(ctx context.Context) error {
	var err error
	for attempt := range sqlTaskStoreMigrateAttempts {
		if err = s.migrateOnce(ctx); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("migrating the task store's schema: %w", err)
		case <-time.After(time.Duration(attempt+1) * 100 * time.Millisecond):
		}
	}
	return fmt.Errorf("migrating the task store's schema: %w", err)
}

func (s *SQLTaskStore) migrateOnce(ctx context.Context) error {
	t := s.opts.Table
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+t+`_schema (id INTEGER PRIMARY KEY, version BIGINT NOT NULL)`); err != nil {
		return err
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO `+t+`_schema (id, version) SELECT 1, 0 WHERE NOT EXISTS (SELECT 1 FROM `+t+`_schema WHERE id = 1)`); err != nil {
		return err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var version int
	if err := tx.QueryRowContext(ctx, `SELECT version FROM `+t+`_schema WHERE id = 1 FOR UPDATE`).Scan(&version); err != nil {
		return err
	}
	migrations := sqlTaskMigrations(t)
	if version > len(migrations) {
		return fmt.Errorf("the database's schema is version %d, newer than this build's %d: run a newer build", version, len(migrations))
	}
	for v := version; v < len(migrations); v++ {
		for _, stmt := range migrations[v] {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("schema version %d: %w", v+1, err)
			}
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE `+t+`_schema SET version = $1 WHERE id = 1`, len(migrations)); err != nil {
		return err
	}
	return tx.Commit()
}
