package main

import (
	"database/sql"
	"strings"
	"testing"
	"time"
)

// TestSQLTaskStoreOptionsValidated: the options are checked, and the
// defaults filled in, before the store touches the database.
func TestSQLTaskStoreOptionsValidated(t *testing.T) {
	db := new(sql.DB) // never used: validation fails or stops before any statement
	tests := []struct {
		name string
		opts SQLTaskStoreOptions
		want string
	}{
		{"no DB", SQLTaskStoreOptions{}, "DB is required"},
		{"table with a space", SQLTaskStoreOptions{DB: db, Table: "mcp tasks"}, "Table \"mcp tasks\""},
		{"table starting with a digit", SQLTaskStoreOptions{DB: db, Table: "1tasks"}, "Table \"1tasks\""},
		{"table too long", SQLTaskStoreOptions{DB: db, Table: strings.Repeat("t", 42)}, "at most 41"},
		{"table with a quote", SQLTaskStoreOptions{DB: db, Table: `t"; DROP`}, "letters, digits and underscores"},
		{"negative limit", SQLTaskStoreOptions{DB: db, Limits: TaskLimits{MaxTasks: -1}}, "mcpstdio: SQLTaskStoreOptions.Limits.MaxTasks must be >= 0, got -1"},
		{"negative lease", SQLTaskStoreOptions{DB: db, Lease: -time.Second}, "mcpstdio: SQLTaskStoreOptions.Lease must be >= 0, got -1s"},
		{"long replica name", SQLTaskStoreOptions{DB: db, Replica: strings.Repeat("r", 201)}, "at most 200"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := validateSQLTaskStoreOptions(&tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("validate = %v, want an error with %q", err, tc.want)
			}
		})
	}
	opts := SQLTaskStoreOptions{DB: db, Table: "tasks_1"}
	if err := validateSQLTaskStoreOptions(&opts); err != nil {
		t.Fatal(err)
	}
	if opts.Lease != DefaultSQLTaskLease || opts.PollInterval != DefaultSQLTaskPollInterval || opts.StatementTimeout != DefaultSQLStatementTimeout ||
		opts.Limits.MaxTasks != DefaultMaxTasks || opts.Replica == "" || opts.Logger == nil {
		t.Fatalf("defaults not filled in: %+v", opts)
	}
	// A replica that dies leaves its tasks failed within a minute by
	// default: its last renewal, the lease, then at most one sweep period.
	if worst := DefaultSQLTaskLease + DefaultSQLTaskLease/3; worst > time.Minute {
		t.Fatalf("with the defaults a dead replica's tasks fail up to %v after its death, want within a minute", worst)
	}
}
