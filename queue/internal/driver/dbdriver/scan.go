package dbdriver

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/navree/navree/queue/internal/driver"
)

// scanner is a row of *sql.Rows (or *sql.Row).
type scanner interface{ Scan(dest ...any) error }

// readJob reads a row of columns that did not scan into its types: SQLite
// keeps any value in any column, so a row written by hand or by another
// program can hold text where a number belongs. It reads each value as
// the database gives it and converts what it can; the job comes back with
// Corrupt naming the first value that does not convert, for the worker to
// fail it, and the other rows of the statement are read as usual. Only a
// row that cannot be read at all returns scanErr.
func readJob(row scanner, scanErr error) (*driver.Job, error) {
	var v [23]any
	if err := scanAny(row, v[:]); err != nil {
		return nil, scanErr
	}
	var r reading
	j := &driver.Job{
		ID: r.text("id", v[0]), Queue: r.text("queue", v[1]), Name: r.text("name", v[2]), Payload: []byte(r.text("payload", v[3])),
		MaxAttempts: int(r.int("max_attempts", v[4])), TimeoutMs: r.int("timeout_ms", v[6]),
		UniqueKey: r.nullText("unique_key", v[7]), UniqueUntil: r.nullInt("unique_until", v[8]), Attempts: int(r.int("attempts", v[9])),
		AvailableAt: r.int("available_at", v[10]), ReservedAt: r.nullInt("reserved_at", v[11]), CreatedAt: r.int("created_at", v[12]),
		LastError: r.nullText("last_error", v[13]), Meta: nullBytesOf(r.nullText("meta", v[14])), Flow: r.nullText("flow", v[15]),
		Priority: int(r.int("priority", v[16])), Snoozes: int(r.int("snoozes", v[17])),
		LimitKey: r.nullText("limit_key", v[18]), RateKey: r.nullText("rate_key", v[19]),
		FairKey: r.nullText("fair_key", v[20]), FairSeq: r.nullInt("fair_seq", v[21]),
	}
	c := r.settings(r.nullText("controls", v[22]))
	j.LimitMax, j.Rate = c.LimitMax, c.Rate()
	setBackoff(j, r.text("backoff", v[5]))
	j.Corrupt = r.problem
	return j, nil
}

// readFailed reads a failed job's row that did not scan into its types,
// as readJob does: what does not convert is left zero, so that listing
// the failed jobs never fails for one row.
func readFailed(row scanner, scanErr error) (driver.FailedJob, error) {
	var v [18]any
	if err := scanAny(row, v[:]); err != nil {
		return driver.FailedJob{}, scanErr
	}
	var r reading
	c := r.settings(r.nullText("controls", v[17]))
	return driver.FailedJob{
		ID: r.text("id", v[0]), Queue: r.text("queue", v[1]), Name: r.text("name", v[2]), Payload: []byte(r.text("payload", v[3])),
		MaxAttempts: int(r.int("max_attempts", v[4])), Backoff: r.text("backoff", v[5]), TimeoutMs: r.int("timeout_ms", v[6]),
		Attempts: int(r.int("attempts", v[7])), Error: r.text("error", v[8]), CreatedAt: r.int("created_at", v[9]), FailedAt: r.int("failed_at", v[10]),
		Meta: nullBytesOf(r.nullText("meta", v[11])), Priority: int(r.int("priority", v[12])),
		LimitKey: r.nullText("limit_key", v[13]), LimitMax: c.LimitMax, RateKey: r.nullText("rate_key", v[14]), Rate: c.Rate(),
		FairKey: r.nullText("fair_key", v[15]), Snoozes: int(r.int("snoozes", v[16])),
	}, nil
}

// settings reads a job's settings from its controls record ("" for
// NULL: none). A record that does not parse is a problem of the row, its
// settings left unset.
func (r *reading) settings(stored string) driver.Controls {
	if stored == "" {
		return driver.Controls{}
	}
	c, err := driver.ReadControls(stored)
	if err != nil && r.problem == "" {
		r.problem = fmt.Sprintf("column controls holds %s, not a JSON object of settings", shown(stored))
	}
	return c
}

// nullBytesOf is a nullable text column as bytes: nil for "".
func nullBytesOf(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

// scanAny scans the current row again, each value as the driver gives it.
func scanAny(row scanner, values []any) error {
	dest := make([]any, len(values))
	for i := range values {
		dest[i] = &values[i]
	}
	return row.Scan(dest...)
}

// reading converts the values of a row read by scanAny and keeps the
// first that does not convert, as a problem.
type reading struct{ problem string }

func (r *reading) bad(column string, v any, want string) {
	if r.problem == "" {
		r.problem = fmt.Sprintf("column %s holds %s, not %s", column, shown(v), want)
	}
}

// shown is a stored value as an error shows it: quoted and cut when it
// is text.
func shown(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case []byte:
		return shown(string(x))
	case string:
		if len(x) > 40 {
			x = strings.ToValidUTF8(x[:40], "") + "…"
		}
		return strconv.Quote(x)
	}
	return fmt.Sprint(v)
}

func (r *reading) text(column string, v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	case nil:
		r.bad(column, v, "a text")
		return ""
	}
	return fmt.Sprint(v)
}

func (r *reading) nullText(column string, v any) string {
	if v == nil {
		return ""
	}
	return r.text(column, v)
}

func (r *reading) int(column string, v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case float64:
		if n := int64(x); float64(n) == x {
			return n
		}
	case string:
		if n, err := strconv.ParseInt(x, 10, 64); err == nil {
			return n
		}
	case []byte:
		if n, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return n
		}
	}
	r.bad(column, v, "a whole number")
	return 0
}

func (r *reading) nullInt(column string, v any) int64 {
	if v == nil {
		return 0
	}
	return r.int(column, v)
}
