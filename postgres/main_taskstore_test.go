package main

import (
	"io"
	"strings"
	"testing"
)

// TestTaskStoreFlags: the PostgreSQL command's own flags are checked before
// anything connects.
func TestTaskStoreFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string // "" when the flags are valid
	}{
		{nil, "-dsn is required"},
		{[]string{"-dsn", "postgres://u@127.0.0.1:1/db", "-db-max-conns", "-1"}, "invalid value \"-1\" for flag -db-max-conns: must be >= 0, got -1"},
		{[]string{"-dsn", "postgres://u@127.0.0.1:1/db", "-task-lease", "-1s"}, "invalid value \"-1s\" for flag -task-lease: must be >= 0, got -1s"},
		{[]string{"-dsn", "postgres://u@127.0.0.1:1/db", "-db-table", "x;drop"}, "-db-table"},
		{[]string{"-dsn", "postgres://u@127.0.0.1:1/db", "-db-max-conns", "4", "-http", "127.0.0.1:0"}, ""},
	}
	// 0 is the default, as for every numeric flag: database/sql's 0 (no
	// limit) never reaches the pool.
	if c, err := parseFlags([]string{"-dsn", "postgres://u@127.0.0.1:1/db", "-db-max-conns", "0", "-task-lease", "0"}, io.Discard); err != nil || c.store.maxConns != defaultDBMaxConns || c.store.lease != 0 {
		t.Errorf("-db-max-conns 0 -task-lease 0: %v, max conns %d, lease %v; want %d and 0 (the option's default)", err, c.store.maxConns, c.store.lease, defaultDBMaxConns)
	}
	for _, tc := range tests {
		var stderr strings.Builder
		c, err := parseFlags(tc.args, &stderr)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.args, err)
		case tc.want == "" && (c.store.maxConns != 4 || c.store.config == nil):
			t.Errorf("%q: parsed %+v", tc.args, c.store)
		case tc.want != "" && (err == nil || !strings.Contains(stderr.String(), tc.want)):
			t.Errorf("%q: error %v, stderr %q; want %q", tc.args, err, stderr.String(), tc.want)
		}
	}
}
