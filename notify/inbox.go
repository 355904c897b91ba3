package notify

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofrs/uuid/v5"
	"github.com/navree/navree/app"
	"github.com/navree/navree/db"
	"github.com/uptrace/bun"
)

// Stored is a notification as the database channel keeps it, in the
// table notifications: one row for each notification and notifiable.
type Stored struct {
	ID             string          // UUID v7, shared by the notification's channels
	Type           string          // its NotificationType
	NotifiableType string          // the notifiable's NotifiableType
	NotifiableID   string          // the notifiable's NotifiableID
	Data           json.RawMessage // what ToDatabase returned, as JSON
	ReadAt         time.Time       // zero while unread
	CreatedAt      time.Time
}

// ErrInvalidQuery matches (with [errors.Is]) the error of an [Inbox]
// method given what it cannot take: a [ListQuery] out of bounds, a cursor
// or an id that is not one, more ids than one call takes, a notifiable
// whose type or id has a NUL byte or is not UTF-8. The message says
// what is allowed; an HTTP handler answers it with 400 Bad Request.
var ErrInvalidQuery = errors.New("invalid query")

const (
	defaultInboxPage = 20
	maxInboxPage     = 100
	maxInboxIDs      = 1000 // ids a call of MarkRead, MarkUnread or Delete takes
)

// inboxColumns are the columns of a [Stored], in the order of storedRow.
const inboxColumns = "id, type, notifiable_type, notifiable_id, data, read_at, created_at"

// storedRow is a row of notifications as the database gives it.
type storedRow struct {
	ID             string        `bun:"id"`
	Type           string        `bun:"type"`
	NotifiableType string        `bun:"notifiable_type"`
	NotifiableID   string        `bun:"notifiable_id"`
	Data           string        `bun:"data"`
	ReadAt         sql.NullInt64 `bun:"read_at"`
	CreatedAt      int64         `bun:"created_at"`
}

func (r storedRow) stored() Stored {
	s := Stored{ID: r.ID, Type: r.Type, NotifiableType: r.NotifiableType, NotifiableID: r.NotifiableID,
		Data: json.RawMessage(r.Data), CreatedAt: time.UnixMilli(r.CreatedAt).UTC()}
	if r.ReadAt.Valid {
		s.ReadAt = time.UnixMilli(r.ReadAt.Int64).UTC()
	}
	return s
}

// insertStored writes s, once: a retried delivery of the same id writes
// nothing (INSERT … ON CONFLICT (id) DO NOTHING, on both databases). It
// joins the unit of work on ctx ([db.DB.Querier]); outside one it writes
// on its own, on SQLite through [db.DB.Write].
func insertStored(ctx context.Context, d *db.DB, s Stored) error {
	id, ok := parseStoredID(s.ID)
	switch {
	case !ok:
		return fmt.Errorf("notify: store notification: the id %q is not a UUID", s.ID)
	case s.Type == "":
		return fmt.Errorf("notify: store notification %s: it has no type", id)
	case s.NotifiableType == "" || s.NotifiableID == "":
		return fmt.Errorf("notify: store notification %s: the notifiable has no type or id (the database channel does not reach an on-demand one)", id)
	case len(s.Data) == 0:
		return fmt.Errorf("notify: store notification %s: it has no data", id)
	case !json.Valid(s.Data):
		return fmt.Errorf("notify: store notification %s: its data is not JSON", id)
	case s.CreatedAt.IsZero():
		return fmt.Errorf("notify: store notification %s: it has no creation time", id)
	}
	var readAt sql.NullInt64
	if !s.ReadAt.IsZero() {
		readAt = sql.NullInt64{Int64: s.ReadAt.UnixMilli(), Valid: true}
	}
	data := "?"
	if d.Dialect() == db.Postgres {
		data = "?::jsonb"
	}
	query := "INSERT INTO notifications (" + inboxColumns + ") VALUES (?, ?, ?, ?, " + data + ", ?, ?) ON CONFLICT (id) DO NOTHING"
	err := inboxWrite(ctx, d, func(q bun.IDB) error {
		_, err := q.NewRaw(query, id, s.Type, s.NotifiableType, s.NotifiableID, string(s.Data), readAt, s.CreatedAt.UnixMilli()).Exec(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("notify: store notification %s: %w", id, err)
	}
	return nil
}

// inboxWrite runs fn, one write, on the transaction of the unit of work
// on ctx when it is d's; else on d itself, holding the process's SQLite
// write lock ([db.DB.Write]).
func inboxWrite(ctx context.Context, d *db.DB, fn func(q bun.IDB) error) error {
	if u := db.UnitOfWorkFrom(ctx); u != nil && u.DB() == d {
		q, err := d.Querier(ctx)
		if err != nil {
			return err
		}
		return fn(q)
	}
	return d.Write(ctx, func() error { return fn(d.DB) })
}

// parseStoredID returns id as a UUID's canonical text, the form ids are
// stored and compared in on both databases.
func parseStoredID(id string) (string, bool) {
	u, err := uuid.FromString(id)
	if err != nil {
		return "", false
	}
	return u.String(), true
}

// Inbox reads and marks the notifications the database channel stored,
// one notifiable's at a time. Every method is scoped to the notifiable it
// is given: one user cannot read, mark or delete another's, and a user
// and a team of the same id are two notifiables.
//
// Its writes join the unit of work on their context ([db.DB.Transaction],
// the request's with [db.Middleware]), and commit or roll back with it.
// Its reads do so once the unit's transaction has begun, and see its
// writes; before, they read outside it, so that listing an inbox does not
// begin a transaction (on SQLite, take the write lock).
type Inbox struct {
	d     *db.DB
	clock app.Clock
}

// NewInbox returns the inbox of the notifications stored in d. MarkRead
// and MarkAllRead stamp the time of clock; nil is [app.SystemClock].
func NewInbox(d *db.DB, clock app.Clock) *Inbox {
	if clock == nil {
		clock = app.SystemClock{}
	}
	return &Inbox{d: d, clock: clock}
}

// ListQuery asks [Inbox.List] for a page of a notifiable's notifications.
type ListQuery struct {
	Unread bool   // only the unread ones
	After  string // the cursor a previous page returned; "" for the newest
	Limit  int    // 1 to 100; 0 for 20
}

// List returns n's notifications, newest first (by id: a UUID v7 sorts
// by creation), a page at a time, and the cursor of the next page, ""
// after the last. A page is found from the cursor in an index of n's
// notifications, never by an offset, and a notification stored while a
// reader pages does not shift the pages after the one it reads.
//
//	q := notify.ListQuery{Unread: true}
//	for {
//		page, next, err := inbox.List(ctx, user, q)
//		// ...
//		if next == "" {
//			break
//		}
//		q.After = next
//	}
func (i *Inbox) List(ctx context.Context, n Notifiable, q ListQuery) ([]Stored, string, error) {
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("notify: list notifications: %w: "+format, append([]any{ErrInvalidQuery}, args...)...)
	}
	typ, id, err := notifiableScope("list notifications", n)
	if err != nil {
		return nil, "", err
	}
	limit := q.Limit
	if limit == 0 {
		limit = defaultInboxPage
	}
	if limit < 1 || limit > maxInboxPage {
		return nil, "", refuse("the limit is %d; want 1 to %d (0 for the default, %d)", q.Limit, maxInboxPage, defaultInboxPage)
	}
	query := "SELECT " + inboxColumns + " FROM notifications WHERE notifiable_type = ? AND notifiable_id = ?"
	args := []any{typ, id}
	if q.Unread {
		query += " AND read_at IS NULL"
	}
	if q.After != "" {
		after, ok := parseStoredID(q.After)
		if !ok {
			return nil, "", refuse("%q is not a cursor: pass the cursor of the page before, or \"\" for the newest", q.After)
		}
		query += " AND id < ?"
		args = append(args, after)
	}
	query += " ORDER BY id DESC LIMIT ?"
	args = append(args, limit+1) // one more says whether a page follows
	r, err := i.reader(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("notify: list notifications: %w", err)
	}
	var rows []storedRow
	if err := r.NewRaw(query, args...).Scan(ctx, &rows); err != nil {
		return nil, "", fmt.Errorf("notify: list notifications: %w", err)
	}
	next := ""
	if len(rows) > limit {
		rows = rows[:limit]
		next = rows[limit-1].ID
	}
	page := make([]Stored, len(rows))
	for k, row := range rows {
		page[k] = row.stored()
	}
	return page, next, nil
}

// UnreadCount returns how many of n's notifications are unread.
func (i *Inbox) UnreadCount(ctx context.Context, n Notifiable) (int, error) {
	typ, id, err := notifiableScope("count unread notifications", n)
	if err != nil {
		return 0, err
	}
	r, err := i.reader(ctx)
	if err != nil {
		return 0, fmt.Errorf("notify: count unread notifications: %w", err)
	}
	var count int
	if err := r.NewRaw("SELECT count(*) FROM notifications WHERE notifiable_type = ? AND notifiable_id = ? AND read_at IS NULL",
		typ, id).Scan(ctx, &count); err != nil {
		return 0, fmt.Errorf("notify: count unread notifications: %w", err)
	}
	return count, nil
}

// MarkRead marks n's notifications of ids read at the inbox's time, and
// returns how many it changed: those already read, and ids that are not
// n's, do not count and change nothing. A call takes up to 1,000 ids.
func (i *Inbox) MarkRead(ctx context.Context, n Notifiable, ids ...string) (int, error) {
	return i.change(ctx, "mark notifications read", n, ids,
		"UPDATE notifications SET read_at = ? WHERE notifiable_type = ? AND notifiable_id = ? AND read_at IS NULL AND id IN (?)", i.now())
}

// MarkUnread marks n's notifications of ids unread, and returns how many
// it changed: those already unread, and ids that are not n's, do not
// count and change nothing. A call takes up to 1,000 ids.
func (i *Inbox) MarkUnread(ctx context.Context, n Notifiable, ids ...string) (int, error) {
	return i.change(ctx, "mark notifications unread", n, ids,
		"UPDATE notifications SET read_at = NULL WHERE notifiable_type = ? AND notifiable_id = ? AND read_at IS NOT NULL AND id IN (?)")
}

// MarkAllRead marks every unread notification of n read at the inbox's
// time, and returns how many.
func (i *Inbox) MarkAllRead(ctx context.Context, n Notifiable) (int, error) {
	typ, id, err := notifiableScope("mark all notifications read", n)
	if err != nil {
		return 0, err
	}
	return i.exec(ctx, "mark all notifications read",
		"UPDATE notifications SET read_at = ? WHERE notifiable_type = ? AND notifiable_id = ? AND read_at IS NULL", i.now(), typ, id)
}

// Delete deletes n's notifications of ids, and returns how many: ids
// that are not n's delete nothing. A call takes up to 1,000 ids.
func (i *Inbox) Delete(ctx context.Context, n Notifiable, ids ...string) (int, error) {
	return i.change(ctx, "delete notifications", n, ids,
		"DELETE FROM notifications WHERE notifiable_type = ? AND notifiable_id = ? AND id IN (?)")
}

// pruneBatch is how many notifications [Inbox.Prune] deletes in one
// transaction.
const pruneBatch = 1000

// Prune deletes every notifiable's read notifications read before
// readBefore, pruneBatch to a transaction so that a million never hold
// one long transaction, and returns how many. Unread notifications stay,
// however old. It reads the table: run it from a scheduled job (the job
// notify.prune, [PruneJob]) or notify:prune. Stopped by ctx or an error,
// it returns the count so far with the error.
func (i *Inbox) Prune(ctx context.Context, readBefore time.Time) (int, error) {
	deleted := 0
	for {
		if err := ctx.Err(); err != nil {
			return deleted, fmt.Errorf("notify: prune notifications: stopped after %d: %w", deleted, err)
		}
		n, err := i.exec(ctx, "prune notifications",
			"DELETE FROM notifications WHERE id IN (SELECT id FROM notifications WHERE read_at IS NOT NULL AND read_at < ? LIMIT ?)",
			readBefore.UnixMilli(), pruneBatch)
		if deleted += n; err != nil || n < pruneBatch {
			return deleted, err
		}
	}
}

// change runs query, a write of n's notifications of ids whose arguments
// are first, the notifiable's type and id, then the ids; it returns
// how many rows the write changed.
func (i *Inbox) change(ctx context.Context, what string, n Notifiable, ids []string, query string, first ...any) (int, error) {
	typ, id, err := notifiableScope(what, n)
	if err != nil {
		return 0, err
	}
	if len(ids) > maxInboxIDs {
		return 0, fmt.Errorf("notify: %s: %w: %d ids; want at most %d a call", what, ErrInvalidQuery, len(ids), maxInboxIDs)
	}
	canonical := make([]string, len(ids))
	for k, raw := range ids {
		c, ok := parseStoredID(raw)
		if !ok {
			return 0, fmt.Errorf("notify: %s: %w: the id %q is not a notification's (a UUID)", what, ErrInvalidQuery, raw)
		}
		canonical[k] = c
	}
	if len(canonical) == 0 {
		return 0, nil
	}
	return i.exec(ctx, what, query, append(first, typ, id, bun.In(canonical))...)
}

// exec runs one write and returns how many rows it changed.
func (i *Inbox) exec(ctx context.Context, what, query string, args ...any) (int, error) {
	var changed int64
	err := inboxWrite(ctx, i.d, func(q bun.IDB) error {
		res, err := q.NewRaw(query, args...).Exec(ctx)
		if err != nil {
			return err
		}
		changed, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("notify: %s: %w", what, err)
	}
	return int(changed), nil
}

// reader returns what a read runs on: the transaction of the unit of work
// on ctx once it has begun, else the database.
func (i *Inbox) reader(ctx context.Context) (bun.IDB, error) {
	if u := db.UnitOfWorkFrom(ctx); u != nil && u.DB() == i.d && u.Began() {
		return i.d.Querier(ctx)
	}
	return i.d.DB, nil
}

func (i *Inbox) now() int64 { return i.clock.Now().UnixMilli() }

// notifiableScope returns the type and id that scope a method to n, refusing a
// notifiable without them, which has no stored notifications, and one
// whose type or id no database stores (a NUL byte, invalid UTF-8: on
// PostgreSQL, an error of the database's own).
func notifiableScope(what string, n Notifiable) (typ, id string, err error) {
	if n == nil {
		return "", "", fmt.Errorf("notify: %s: no notifiable", what)
	}
	typ, id = n.NotifiableType(), n.NotifiableID()
	if typ == "" || id == "" {
		return "", "", fmt.Errorf("notify: %s: the notifiable %T has no type or id (the database channel stores nothing for an on-demand one)", what, n)
	}
	for _, f := range []struct{ name, value string }{{"type", typ}, {"id", id}} {
		if strings.ContainsRune(f.value, 0) || !utf8.ValidString(f.value) {
			return "", "", fmt.Errorf("notify: %s: %w: the notifiable %s %q has a NUL byte or is not UTF-8, which no database stores", what, ErrInvalidQuery, f.name, f.value)
		}
	}
	return typ, id, nil
}
