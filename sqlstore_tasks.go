package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// The TaskStore methods of SQLTaskStore. Every change (Create, Update, the
// sweeper's) runs in a transaction that takes the one row of <Table>_state
// (UPDATE ... RETURNING), which holds the change counter and the tasks and
// bytes of all tasks: that serializes the writers from there to their
// commit, so the limits are counted exactly across replicas and the change
// numbers (seq) commit in order, which is what lets the change feed read
// "everything after seq N" without missing a change committed late. The
// statements under that lock are few: the state row and the task's row in
// one statement, the owner's count where there is an owner, the NOTIFY, the
// commit.

// sqlTaskColumns are the columns of a record, in scan order.
const sqlTaskColumns = `id, owner, status, status_message, created_ms, updated_ms, ttl_ms, poll_interval_ms, input_requests, answers, result, error, held, version`

// sqlTerminal is the SQL list of the terminal statuses.
const sqlTerminal = `('` + TaskCompleted + `', '` + TaskFailed + `', '` + TaskCancelled + `')`

// sqlTaskStatements are the statements of one table.
type sqlTaskStatements struct {
	nextSeq, purge, countOwner, create, get, head, update, updateEnded, addBytes, countByStatus string
}

func newSQLTaskStatements(t string) sqlTaskStatements {
	return sqlTaskStatements{
		nextSeq: `UPDATE ` + t + `_state SET seq = seq + 1 WHERE id = 1 RETURNING seq`,
		// Expired tasks go, and stop counting, in one statement.
		purge: `WITH gone AS (DELETE FROM ` + t + ` WHERE expires_ms <= $1 RETURNING size)
			UPDATE ` + t + `_state SET tasks = tasks - (SELECT COUNT(*) FROM gone), bytes = bytes - (SELECT COALESCE(SUM(size), 0) FROM gone) WHERE id = 1`,
		countOwner: `SELECT COUNT(*), COALESCE(SUM(size), 0) FROM ` + t + ` WHERE owner = $1`,
		// The state row (counted with the new task) and the task's row, in
		// one statement: the totals come back for the limits' check.
		create: `WITH state AS (UPDATE ` + t + `_state SET seq = seq + 1, tasks = tasks + 1, bytes = bytes + $15 WHERE id = 1 RETURNING seq, tasks, bytes),
			task AS (INSERT INTO ` + t + ` (id, owner, status, status_message, created_ms, updated_ms, expires_ms, ttl_ms, poll_interval_ms,
				input_requests, answers, result, error, held, size, version, runner, lease_until_ms, seq, changed_by)
				SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, 1, $16, $17, state.seq, $16 FROM state)
			SELECT tasks, bytes FROM state`,
		get:  `SELECT ` + sqlTaskColumns + ` FROM ` + t + ` WHERE id = $1 AND expires_ms > $2`,
		head: `SELECT owner, status, size, version FROM ` + t + ` WHERE id = $1 AND expires_ms > $2`,
		// Tasks by status, for the telemetry's gauge: expired rows the
		// sweeper has not deleted yet are not counted.
		countByStatus: `SELECT status, COUNT(*) FROM ` + t + ` WHERE expires_ms > $1 GROUP BY status`,
		addBytes:      `UPDATE ` + t + `_state SET seq = seq + 1, bytes = bytes + $1 WHERE id = 1 RETURNING seq, tasks, bytes`,
		// A terminal status never changes: the WHERE clause refuses it.
		update: `UPDATE ` + t + ` SET status = $3, status_message = $4, updated_ms = $5, poll_interval_ms = $6, input_requests = $7, answers = $8,
			result = $9, error = $10, held = $11, size = $12, version = version + 1, seq = $13, changed_by = $14
			WHERE id = $1 AND version = $2 AND status NOT IN ` + sqlTerminal,
		// A terminal task only gives back what it held: its answers and the
		// bytes of its request.
		updateEnded: `UPDATE ` + t + ` SET answers = $3, held = $4, size = $5, version = version + 1, seq = $6, changed_by = $7
			WHERE id = $1 AND version = $2 AND status IN ` + sqlTerminal,
	}
}

// CountTasksByStatus implements TaskStatusCounter with one query over every
// replica's tasks, bounded by the statement timeout (and ctx).
func (s *SQLTaskStore) CountTasksByStatus(ctx context.Context) (map[string]int64, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	rows, err := s.db.QueryContext(ctx, s.q.countByStatus, s.now().UnixMilli())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	counts := newTaskStatusCounts()
	for rows.Next() {
		var status string
		var n int64
		if err := rows.Scan(&status, &n); err != nil {
			return nil, err
		}
		counts[status] = n
	}
	return counts, rows.Err()
}

// errTerminalTask: an Update would change a terminal task's status.
var errTerminalTask = errors.New("the task is over: its status never changes")

// Create stores rec as version 1, leased to this replica, once the limits
// (counted over every replica's tasks) allow it; it returns once the
// transaction committed. Expired tasks count until the sweeper deletes them
// (every Lease/3).
func (s *SQLTaskStore) Create(ctx context.Context, rec *TaskRecord) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	row, err := encodeTaskRow(rec)
	if err != nil {
		return err
	}
	now := s.now()
	err = s.inTx(ctx, rec.ID, func(tx *sql.Tx) error {
		var tasks, bytes int64
		err := tx.QueryRowContext(ctx, s.q.create, rec.ID, rec.Owner, rec.Status, rec.StatusMessage,
			rec.CreatedAt.UnixMilli(), rec.LastUpdatedAt.UnixMilli(), rec.expiresAt().UnixMilli(), rec.TTL.Milliseconds(), rec.PollInterval.Milliseconds(),
			row.inputRequests, row.answers, row.result, row.error, rec.Held, row.size,
			s.opts.Replica, now.Add(s.opts.Lease).UnixMilli()).Scan(&tasks, &bytes)
		if err != nil {
			return err
		}
		return s.admit(ctx, tx, rec.Owner, tasks, bytes, true, 0)
	})
	if err != nil {
		return fmt.Errorf("creating task %s: %w", rec.ID, err)
	}
	return nil
}

// Get reads the task's current record.
func (s *SQLTaskStore) Get(ctx context.Context, id string) (*TaskRecord, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	rec, err := scanTaskRecord(s.db.QueryRowContext(ctx, s.q.get, id, s.now().UnixMilli()))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, ErrTaskNotFound
	case err != nil:
		return nil, fmt.Errorf("reading task %s: %w", id, err)
	}
	return rec, nil
}

// Update stores rec as version rec.Version+1 when the stored record is
// still version rec.Version. A terminal task keeps its status, message,
// result and error whatever rec says (an Update may only give back what it
// held); one that would change them fails.
func (s *SQLTaskStore) Update(ctx context.Context, rec *TaskRecord) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	row, err := encodeTaskRow(rec)
	if err != nil {
		return err
	}
	err = s.inTx(ctx, rec.ID, func(tx *sql.Tx) error {
		var owner, status string
		var size int64
		var version uint64
		switch err := tx.QueryRowContext(ctx, s.q.head, rec.ID, s.now().UnixMilli()).Scan(&owner, &status, &size, &version); {
		case errors.Is(err, sql.ErrNoRows):
			return ErrTaskNotFound
		case err != nil:
			return err
		case version != rec.Version:
			return ErrTaskConflict
		}
		var seq, tasks, bytes int64
		if err := tx.QueryRowContext(ctx, s.q.addBytes, row.size-size).Scan(&seq, &tasks, &bytes); err != nil {
			return err
		}
		if grow := row.size - size; grow > 0 {
			if err := s.admit(ctx, tx, owner, tasks, bytes, false, grow); err != nil {
				return err
			}
		}
		var res sql.Result
		var err error
		if isTerminalStatus(status) {
			if rec.Status != status {
				return errTerminalTask
			}
			res, err = tx.ExecContext(ctx, s.q.updateEnded, rec.ID, rec.Version, row.answers, rec.Held, row.size, seq, s.opts.Replica)
		} else {
			res, err = tx.ExecContext(ctx, s.q.update, rec.ID, rec.Version, rec.Status, rec.StatusMessage, rec.LastUpdatedAt.UnixMilli(),
				rec.PollInterval.Milliseconds(), row.inputRequests, row.answers, row.result, row.error, rec.Held, row.size, seq, s.opts.Replica)
		}
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err == nil && n == 0 {
			return ErrTaskConflict
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrTaskNotFound) || errors.Is(err, ErrTaskConflict) {
			return err
		}
		return fmt.Errorf("updating task %s: %w", rec.ID, err)
	}
	s.changedHere(rec.ID, rec.Version+1)
	return nil
}

// inTx runs change in a transaction and announces task id's change to the
// other replicas; it commits when change returns nil. change takes the
// state row.
func (s *SQLTaskStore) inTx(ctx context.Context, id string, change func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := change(tx); err != nil {
		return err
	}
	if err := s.notify(ctx, tx, id); err != nil {
		return err
	}
	return tx.Commit()
}

// notify announces task id's change within tx, if there is a Notifier. The
// payload names this replica, so that its own listener skips it.
func (s *SQLTaskStore) notify(ctx context.Context, tx *sql.Tx, id string) error {
	if s.opts.Notifier == nil {
		return nil
	}
	return s.opts.Notifier.Notify(ctx, tx, s.opts.Replica+"/"+id)
}

// admit checks a change within a transaction holding the state row, whose
// totals with the change are tasks and bytes: a new task (newTask, stored
// already), or a record of owner's that grows by pending bytes (not stored
// yet).
func (s *SQLTaskStore) admit(ctx context.Context, tx *sql.Tx, owner string, tasks, bytes int64, newTask bool, pending int64) error {
	l := s.opts.Limits
	switch {
	case newTask && tasks > int64(l.MaxTasks):
		return &TaskLimitError{Detail: fmt.Sprintf("the server holds %d tasks, its limit", l.MaxTasks)}
	case bytes > l.MaxBytes:
		return &TaskLimitError{Detail: fmt.Sprintf("the server's tasks would hold more than %d bytes", l.MaxBytes)}
	}
	if owner == "" {
		return nil
	}
	var count int
	var sum int64
	if err := tx.QueryRowContext(ctx, s.q.countOwner, owner).Scan(&count, &sum); err != nil {
		return err
	}
	switch {
	case newTask && count > l.MaxTasksPerOwner:
		return &TaskLimitError{Detail: fmt.Sprintf("this client holds %d tasks, its limit", l.MaxTasksPerOwner)}
	case sum+pending > l.MaxBytesPerOwner:
		return &TaskLimitError{Detail: fmt.Sprintf("this client's tasks would hold more than %d bytes", l.MaxBytesPerOwner)}
	}
	return nil
}

// taskRow is the encoded columns of a record: JSON text, or NULL.
type taskRow struct {
	inputRequests, answers, result, error sql.NullString
	size                                  int64
}

func encodeTaskRow(rec *TaskRecord) (taskRow, error) {
	row := taskRow{size: rec.size()}
	for _, col := range []struct {
		dst   *sql.NullString
		value any
		set   bool
	}{
		{&row.inputRequests, rec.InputRequests, len(rec.InputRequests) > 0},
		{&row.answers, rec.Answers, len(rec.Answers) > 0},
		{&row.error, rec.Error, rec.Error != nil},
	} {
		if !col.set {
			continue
		}
		b, err := json.Marshal(col.value)
		if err != nil {
			return row, fmt.Errorf("encoding task %s: %w", rec.ID, err)
		}
		*col.dst = sql.NullString{String: string(b), Valid: true}
	}
	if rec.Result != nil {
		row.result = sql.NullString{String: string(rec.Result), Valid: true}
	}
	return row, nil
}

// scanTaskRecord reads one row of sqlTaskColumns.
func scanTaskRecord(row interface{ Scan(...any) error }) (*TaskRecord, error) {
	var rec TaskRecord
	var created, updated, ttl, poll int64
	var enc taskRow
	err := row.Scan(&rec.ID, &rec.Owner, &rec.Status, &rec.StatusMessage, &created, &updated, &ttl, &poll,
		&enc.inputRequests, &enc.answers, &enc.result, &enc.error, &rec.Held, &rec.Version)
	if err != nil {
		return nil, err
	}
	rec.CreatedAt, rec.LastUpdatedAt = time.UnixMilli(created), time.UnixMilli(updated)
	rec.TTL, rec.PollInterval = time.Duration(ttl)*time.Millisecond, time.Duration(poll)*time.Millisecond
	for _, col := range []struct {
		src sql.NullString
		dst any
	}{
		{enc.inputRequests, &rec.InputRequests},
		{enc.answers, &rec.Answers},
		{enc.error, &rec.Error},
	} {
		if col.src.Valid {
			if err := json.Unmarshal([]byte(col.src.String), col.dst); err != nil {
				return nil, fmt.Errorf("decoding task %s: %w", rec.ID, err)
			}
		}
	}
	if enc.result.Valid {
		rec.Result = json.RawMessage(enc.result.String)
	}
	return &rec, nil
}
