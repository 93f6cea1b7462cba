package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// This module's command is the reference server (the repository root's
// files, linked here) with its tasks kept in PostgreSQL: this file replaces
// the root's main_taskstore.go, which keeps them in memory. Replicas given
// the same -dsn (and -state-key-file) answer for each other's tasks.

// Defaults of the flags.
const (
	defaultDBMaxConns = 10
	dbConnectTimeout  = 10 * time.Second
)

// taskStoreFlags say which database keeps the tasks, and how.
type taskStoreFlags struct {
	dsn              string
	maxConns         int
	table            string
	lease            time.Duration
	pollInterval     time.Duration
	statementTimeout time.Duration
	config           *pgx.ConnConfig // parsed from dsn by check
}

func (f *taskStoreFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.dsn, "dsn", "", "PostgreSQL connection string (postgres://user@host:port/db?sslmode=... or key=value pairs) of the database that keeps the tasks; required")
	optionVar(fs, &f.maxConns, "db-max-conns", defaultDBMaxConns, "connections to the database at most, besides the one that listens for other replicas' changes")
	fs.StringVar(&f.table, "db-table", DefaultSQLTaskTable, "the tasks table (created or migrated at start); replicas that share tasks name the same one")
	optionVar(fs, &f.lease, "task-lease", DefaultSQLTaskLease, "how long a running task stays leased to its replica without a renewal (renewed every third of it); a replica that dies leaves its tasks failed once the lease expires")
	optionVar(fs, &f.pollInterval, "db-poll-interval", DefaultSQLTaskPollInterval, "how often the database is read for other replicas' changes when LISTEN/NOTIFY misses them")
	optionVar(fs, &f.statementTimeout, "db-statement-timeout", DefaultSQLStatementTimeout, "limit of each operation on the database; the request is then answered with an error")
}

func (f *taskStoreFlags) check() error {
	if f.dsn == "" {
		return errors.New("-dsn is required: the PostgreSQL database that keeps the tasks")
	}
	config, err := pgx.ParseConfig(f.dsn)
	if err != nil {
		return fmt.Errorf("-dsn: %v", err)
	}
	f.config = config
	defaultTo(&f.maxConns, defaultDBMaxConns) // 0 would be database/sql's "no limit"
	if !validSQLTableName(f.table) {
		return fmt.Errorf("-db-table %q: want letters, digits and underscores", f.table)
	}
	return nil
}

// open connects to the database, migrates its schema and starts the store.
func (f *taskStoreFlags) open(limits TaskLimits, logger *slog.Logger) (TaskStore, func(), error) {
	// region sql-store
	db := stdlib.OpenDB(*f.config)
	db.SetMaxOpenConns(f.maxConns)
	db.SetMaxIdleConns(f.maxConns)
	ctx, cancel := context.WithTimeout(context.Background(), dbConnectTimeout)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("connecting to -dsn: %w", err)
	}
	store, err := NewSQLTaskStore(ctx, SQLTaskStoreOptions{
		DB: db, Table: f.table, Limits: limits, Lease: f.lease, PollInterval: f.pollInterval,
		StatementTimeout: f.statementTimeout, Logger: logger,
		Notifier: &pgNotifier{config: f.config, channel: f.table},
	})
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	// endregion sql-store
	logger.Info("mcpstdio: tasks kept in PostgreSQL", "table", f.table, "replica", store.Replica(), "max_conns", f.maxConns)
	return store, func() {
		store.Close()
		db.Close()
	}, nil
}

// pgNotifier is the SQLTaskNotifier of PostgreSQL: NOTIFY in the changing
// transaction (delivered at its commit), LISTEN on a connection of its own
// (database/sql has no LISTEN: this is the pgx-specific part).
type pgNotifier struct {
	config  *pgx.ConnConfig
	channel string
}

func (n *pgNotifier) Notify(ctx context.Context, tx *sql.Tx, id string) error {
	_, err := tx.ExecContext(ctx, `SELECT pg_notify($1, $2)`, n.channel, id)
	return err
}

func (n *pgNotifier) Listen(ctx context.Context, changed func(id string)) error {
	conn, err := pgx.ConnectConfig(ctx, n.config.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{n.channel}.Sanitize()); err != nil {
		return err
	}
	for {
		note, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		changed(note.Payload)
	}
}
