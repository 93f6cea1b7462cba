package main

import (
	"flag"
	"log/slog"
)

// taskStoreFlags are the command's flags for where it keeps tasks. This
// command keeps them in its memory (the default TaskStore) and has none. The
// postgres module's command builds from this directory's files with its own
// version of this file (postgres/main_taskstore.go), which adds -dsn and the
// connection pool's bound and keeps the tasks in PostgreSQL
// (docs/how-to/deploy.md).
type taskStoreFlags struct{}

// register adds the flags to fs.
func (*taskStoreFlags) register(*flag.FlagSet) {}

// check validates the flags once parsed.
func (*taskStoreFlags) check() error { return nil }

// open returns the store the runtime keeps its tasks in (nil: in memory,
// bound by limits) and the function that closes it when the command ends.
func (*taskStoreFlags) open(TaskLimits, *slog.Logger) (TaskStore, func(), error) {
	return nil, func() {}, nil
}
