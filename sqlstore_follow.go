package main

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// What SQLTaskStore does beside answering calls: it follows the database
// for the changes other replicas make (for the watches of the tasks this
// replica runs, and for the change feed that reaches listen streams),
// renews the leases of the tasks this replica runs, and sweeps: expired
// tasks are deleted, and tasks whose runner stopped renewing its lease end
// failed. Each runs in a goroutine of the store until Close.

// sqlFollowBatch bounds the IDs of one statement and the rows of one read of
// the change feed.
const sqlFollowBatch = 200

// sqlFollowers are the watches and change feeds of a store, under mu.
type sqlFollowers struct {
	mu      sync.Mutex
	next    int
	watches map[int]*sqlWatch
	feeds   map[int]func(*TaskRecord)
	seq     int64 // the change feed has delivered every change up to seq
}

// sqlWatch is one Watch: the version of the task its owner last saw.
type sqlWatch struct {
	id      string
	ch      chan struct{}
	version uint64
	gone    bool // the task was forgotten (and that was signalled)
}

func (w *sqlWatch) signal() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// Watch signals after each later change of the task, whichever replica made
// it: at once for this replica's changes, within PollInterval (or at the
// Notifier's announcement) for the others', and when the task is forgotten.
// While the replica that created the task watches it, its lease is renewed.
func (s *SQLTaskStore) Watch(ctx context.Context, id string) (<-chan struct{}, func(), error) {
	rec, err := s.Get(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	w := &sqlWatch{id: id, ch: make(chan struct{}, 1), version: rec.Version}
	return w.ch, s.follow.add(func(key int) { s.follow.watches[key] = w }, func(key int) { delete(s.follow.watches, key) }), nil
}

// FollowTaskChanges calls changed with the new record of every task another
// replica changed (or the sweeper failed), in the order of the changes,
// until stop is called or the store is closed. changed runs on the store's
// goroutine and must not block.
func (s *SQLTaskStore) FollowTaskChanges(changed func(*TaskRecord)) (stop func()) {
	return s.follow.add(func(key int) { s.follow.feeds[key] = changed }, func(key int) { delete(s.follow.feeds, key) })
}

// add registers a watch or a feed under a new key, with f.mu held, and
// returns the function that unregisters it (once; later calls do nothing).
func (f *sqlFollowers) add(register, unregister func(key int)) (stop func()) {
	f.mu.Lock()
	key := f.next
	f.next++
	register(key)
	f.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			unregister(key)
		})
	}
}

// changedHere signals the watches of a change this replica made (the task
// is now version).
func (s *SQLTaskStore) changedHere(id string, version uint64) {
	f := &s.follow
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.watches {
		if w.id == id && w.version < version {
			w.version = version
			w.signal()
		}
	}
}

// poke makes the poller read the database now.
func (s *SQLTaskStore) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// startFollowing reads the change feed's position and starts the poller,
// the keeper (leases and sweep) and the Notifier's listener.
func (s *SQLTaskStore) startFollowing(ctx context.Context) error {
	if err := s.db.QueryRowContext(ctx, `SELECT seq FROM `+s.opts.Table+`_state WHERE id = 1`).Scan(&s.follow.seq); err != nil {
		return fmt.Errorf("reading the task store's change counter: %w", err)
	}
	run, stop := context.WithCancel(context.Background())
	s.stop = stop
	loops := []func(context.Context){s.pollLoop, s.keepLoop}
	if s.opts.Notifier != nil {
		loops = append(loops, s.listenLoop)
	}
	for _, loop := range loops {
		s.done.Add(1)
		go func() {
			defer s.done.Done()
			loop(run)
		}()
	}
	return nil
}

// pollLoop reads the other replicas' changes every PollInterval, and at
// once when the Notifier announces one.
func (s *SQLTaskStore) pollLoop(ctx context.Context) {
	tick := time.NewTicker(s.opts.PollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-s.wake:
		}
		if err := s.pollWatches(ctx); err != nil && ctx.Err() == nil {
			s.logger.Warn("task store: reading watched tasks failed", "err", err)
		}
		if err := s.pollFeed(ctx); err != nil && ctx.Err() == nil {
			s.logger.Warn("task store: reading the change feed failed", "err", err)
		}
	}
}

// keepLoop renews this replica's leases and sweeps, every Lease/3. It
// fails other replicas' tasks only once it has reached the database without
// a failure for a whole Lease: after an outage of the database itself every
// replica missed its renewals, and the runners get a lease's time to renew
// (and to store the ends their handlers reached meanwhile) before anyone
// takes their expired leases for deaths.
func (s *SQLTaskStore) keepLoop(ctx context.Context) {
	tick := time.NewTicker(s.opts.Lease / 3)
	defer tick.Stop()
	healthySince := s.now()
	for {
		err := s.renewLeases(ctx)
		if err == nil {
			err = s.purgeExpired(ctx)
		}
		if err == nil && s.now().Sub(healthySince) >= s.opts.Lease {
			err = s.failOrphans(ctx)
		}
		if err != nil && ctx.Err() == nil {
			s.logger.Warn("task store: renewing leases or sweeping failed", "err", err)
			healthySince = s.now()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// listenLoop keeps the Notifier listening, reconnecting after a failure
// (the poller covers the gap).
func (s *SQLTaskStore) listenLoop(ctx context.Context) {
	for {
		s.poke() // what was announced while not listening
		own := s.opts.Replica + "/"
		err := s.opts.Notifier.Listen(ctx, func(payload string) {
			if !strings.HasPrefix(payload, own) {
				s.poke()
			}
		})
		if ctx.Err() != nil {
			return
		}
		s.logger.Warn("task store: listening for changes failed; polling meanwhile", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(s.opts.PollInterval):
		}
	}
}

// watchedIDs returns the IDs of the open watches.
func (s *SQLTaskStore) watchedIDs() []string {
	f := &s.follow
	f.mu.Lock()
	defer f.mu.Unlock()
	seen := map[string]bool{}
	var ids []string
	for _, w := range f.watches {
		if !seen[w.id] {
			seen[w.id] = true
			ids = append(ids, w.id)
		}
	}
	return ids
}

// pollWatches reads the versions of the watched tasks and signals the
// watches of those that changed or are gone.
func (s *SQLTaskStore) pollWatches(ctx context.Context) error {
	ids := s.watchedIDs()
	versions := make(map[string]uint64, len(ids))
	for chunk := range slices.Chunk(ids, sqlFollowBatch) {
		err := s.queryRows(ctx, func(rows *sql.Rows) error {
			var id string
			var version uint64
			if err := rows.Scan(&id, &version); err != nil {
				return err
			}
			versions[id] = version
			return nil
		}, `SELECT id, version FROM `+s.opts.Table+` WHERE expires_ms > $1 AND id IN (`+sqlPlaceholders(2, len(chunk))+`)`,
			append([]any{s.now().UnixMilli()}, stringArgs(chunk)...)...)
		if err != nil {
			return err
		}
	}
	f := &s.follow
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.watches {
		switch v, ok := versions[w.id]; {
		case !ok && !w.gone && slices.Contains(ids, w.id):
			w.gone = true
			w.signal()
		case ok && v > w.version:
			w.version = v
			w.signal()
		}
	}
	return nil
}

// pollFeed delivers the changes made since the feed's position by other
// replicas (and by any replica's sweeper) to the feeds, in order.
func (s *SQLTaskStore) pollFeed(ctx context.Context) error {
	f := &s.follow
	for {
		f.mu.Lock()
		from, feeds := f.seq, len(f.feeds)
		f.mu.Unlock()
		if feeds == 0 {
			return nil
		}
		var changes []*TaskRecord
		last, n := from, 0
		err := s.queryRows(ctx, func(rows *sql.Rows) error {
			var seq int64
			var by string
			rec, err := scanTaskRecord(rowScanner(func(dst ...any) error {
				return rows.Scan(append([]any{&seq, &by}, dst...)...)
			}))
			if err != nil {
				return err
			}
			n++
			last = seq
			if by != s.opts.Replica {
				changes = append(changes, rec)
			}
			return nil
		}, `SELECT seq, changed_by, `+sqlTaskColumns+` FROM `+s.opts.Table+` WHERE seq > $1 ORDER BY seq LIMIT `+strconv.Itoa(sqlFollowBatch), from)
		if err != nil {
			return err
		}
		f.mu.Lock()
		if f.seq == from {
			f.seq = last
		}
		fns := make([]func(*TaskRecord), 0, len(f.feeds))
		for _, fn := range f.feeds {
			fns = append(fns, fn)
		}
		for _, rec := range changes {
			for _, w := range f.watches {
				if w.id == rec.ID && rec.Version > w.version {
					w.version = rec.Version
					w.signal()
				}
			}
		}
		f.mu.Unlock()
		for _, rec := range changes {
			for _, fn := range fns {
				fn(rec.clone())
			}
		}
		if n < sqlFollowBatch {
			return nil
		}
	}
}

// renewLeases extends the leases of the tasks this replica watches (the
// tasks whose handlers run here) that are not over.
func (s *SQLTaskStore) renewLeases(ctx context.Context) error {
	until := s.now().Add(s.opts.Lease).UnixMilli()
	for chunk := range slices.Chunk(s.watchedIDs(), sqlFollowBatch) {
		ctx, cancel := s.op(ctx)
		_, err := s.db.ExecContext(ctx, `UPDATE `+s.opts.Table+` SET lease_until_ms = $1 WHERE runner = $2 AND status NOT IN `+sqlTerminal+
			` AND id IN (`+sqlPlaceholders(3, len(chunk))+`)`, append([]any{until, s.opts.Replica}, stringArgs(chunk)...)...)
		cancel()
		if err != nil {
			return err
		}
	}
	return nil
}

// sweep deletes the expired tasks and fails the running ones whose lease
// expired.
func (s *SQLTaskStore) sweep(ctx context.Context) error {
	if err := s.purgeExpired(ctx); err != nil {
		return err
	}
	return s.failOrphans(ctx)
}

// purgeExpired deletes the tasks whose TTL passed (and uncounts them).
func (s *SQLTaskStore) purgeExpired(ctx context.Context) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	_, err := s.db.ExecContext(ctx, s.q.purge, s.now().UnixMilli())
	return err
}

// failOrphans fails the running tasks whose lease expired: their replica
// died (or could not reach the database for a whole lease while others
// could).
func (s *SQLTaskStore) failOrphans(ctx context.Context) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	now := s.now()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var seq int64
	if err := tx.QueryRowContext(ctx, s.q.nextSeq).Scan(&seq); err != nil {
		return err
	}
	type orphan struct {
		id, runner  string
		lease, size int64
	}
	var orphans []orphan
	err = queryRowsTx(ctx, tx, func(rows *sql.Rows) error {
		var o orphan
		if err := rows.Scan(&o.id, &o.runner, &o.lease, &o.size); err != nil {
			return err
		}
		orphans = append(orphans, o)
		return nil
	}, `SELECT id, runner, lease_until_ms, size FROM `+s.opts.Table+` WHERE status NOT IN `+sqlTerminal+` AND lease_until_ms < $1 AND expires_ms > $1 LIMIT `+strconv.Itoa(sqlFollowBatch)+` FOR UPDATE`, now.UnixMilli())
	if err != nil || len(orphans) == 0 {
		return err
	}
	var delta int64
	for _, o := range orphans {
		failure := &RPCError{Code: CodeInternalError, Message: leaseExpiredMessage(o.runner, time.UnixMilli(o.lease))}
		rec := &TaskRecord{StatusMessage: failure.Message, Error: failure}
		row, err := encodeTaskRow(rec)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE `+s.opts.Table+` SET status = $2, status_message = $3, error = $4, result = NULL, input_requests = NULL, answers = NULL,
			held = 0, size = $5, updated_ms = $6, version = version + 1, seq = $7, changed_by = ''
			WHERE id = $1 AND status NOT IN `+sqlTerminal+` AND lease_until_ms < $6`,
			o.id, TaskFailed, failure.Message, row.error, row.size, now.UnixMilli(), seq)
		if err != nil {
			return err
		}
		delta += row.size - o.size
		if err := s.notify(ctx, tx, o.id); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE `+s.opts.Table+`_state SET bytes = bytes + $1 WHERE id = 1`, delta); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	s.logger.Warn("task store: failed tasks whose replica stopped renewing their lease", "tasks", len(orphans))
	s.poke()
	return nil
}

// leaseExpiredMessage says why a task failed without its handler's word.
func leaseExpiredMessage(runner string, lease time.Time) string {
	return fmt.Sprintf("The server replica running this task (%s) stopped: its lease expired at %s without a renewal", runner, lease.UTC().Format(time.RFC3339))
}

// queryRows runs query with the statement timeout and calls each for every
// row.
func (s *SQLTaskStore) queryRows(ctx context.Context, each func(*sql.Rows) error, query string, args ...any) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	return scanRows(rows, each)
}

func queryRowsTx(ctx context.Context, tx *sql.Tx, each func(*sql.Rows) error, query string, args ...any) error {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	return scanRows(rows, each)
}

func scanRows(rows *sql.Rows, each func(*sql.Rows) error) error {
	defer rows.Close()
	for rows.Next() {
		if err := each(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// rowScanner adapts a function to scanTaskRecord's row.
type rowScanner func(dst ...any) error

func (f rowScanner) Scan(dst ...any) error { return f(dst...) }

// sqlPlaceholders returns "$from, $from+1, ..." (n of them).
func sqlPlaceholders(from, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("$" + strconv.Itoa(from+i))
	}
	return b.String()
}

func stringArgs(ss []string) []any {
	args := make([]any, len(ss))
	for i, s := range ss {
		args[i] = s
	}
	return args
}
