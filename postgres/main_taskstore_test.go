package main

import (
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
		{[]string{"-dsn", "postgres://u@127.0.0.1:1/db", "-db-max-conns", "0"}, "-db-max-conns must be positive"},
		{[]string{"-dsn", "postgres://u@127.0.0.1:1/db", "-task-lease", "0s"}, "-task-lease must be positive"},
		{[]string{"-dsn", "postgres://u@127.0.0.1:1/db", "-db-table", "x;drop"}, "-db-table"},
		{[]string{"-dsn", "postgres://u@127.0.0.1:1/db", "-db-max-conns", "4", "-http", "127.0.0.1:0"}, ""},
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
