package notify_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/config"
	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/migrations"
	"github.com/navree/navree/notify"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/testing/apptest"
)

// inboxOwner is a notifiable of the inbox's tests: a user or a team.
type inboxOwner struct{ typ, id string }

func (o inboxOwner) NotifiableType() string { return o.typ }
func (o inboxOwner) NotifiableID() string   { return o.id }
func (o inboxOwner) RouteFor(string) string { return "" }

var (
	user1 = inboxOwner{"user", "1"}
	user2 = inboxOwner{"user", "2"}
	team1 = inboxOwner{"team", "1"} // the id of user1, of another type
)

// inboxT0 is the time of the inbox's tests.
var inboxT0 = time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)

// inboxSets are the migration sets of the inbox's table.
var inboxSets = []db.MigrationSet{{Name: "notifications", FS: migrations.Notifications}}

// eachInboxDB runs f as the subtests "sqlite" and "postgres", each with a
// database migrated with the set notifications.
func eachInboxDB(t *testing.T, f func(t *testing.T, d *db.DB)) {
	t.Helper()
	dbtest.EachMigrated(t, inboxSets, func(t *testing.T, url string) {
		f(t, migratedInboxDB(t, url))
	})
}

func migratedInboxDB(t testing.TB, url string) *db.DB {
	t.Helper()
	d := dbtest.Open(t, url)
	if _, err := db.NewMigrator(d, inboxSets).Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return d
}

// inboxID returns the n-th id of a test: ids sort as n does, as UUID v7
// sort by creation.
func inboxID(n int) string { return fmt.Sprintf("01900000-%04x-7000-8000-%012x", n/0x10000, n%0x10000) }

// store stores a notification of n for who, created n ms after inboxT0,
// unread.
func store(t testing.TB, d *db.DB, who inboxOwner, n int) notify.Stored {
	t.Helper()
	s := notify.Stored{ID: inboxID(n), Type: "invoice.paid", NotifiableType: who.typ, NotifiableID: who.id,
		Data: json.RawMessage(fmt.Sprintf(`{"invoice_id": "inv-%d", "amount": "%d.00"}`, n, n)), CreatedAt: inboxT0.Add(time.Duration(n) * time.Millisecond)}
	if err := notify.InsertStored(context.Background(), d, s); err != nil {
		t.Fatal(err)
	}
	return s
}

func rowCount(t testing.TB, d *db.DB) int {
	t.Helper()
	var n int
	if err := d.NewRaw("SELECT count(*) FROM notifications").Scan(context.Background(), &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// all lists every notification of who, newest first, in pages of 100.
func all(t testing.TB, inbox *notify.Inbox, who notify.Notifiable) []notify.Stored {
	t.Helper()
	var out []notify.Stored
	q := notify.ListQuery{Limit: 100}
	for {
		page, next, err := inbox.List(context.Background(), who, q)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page...)
		if next == "" {
			return out
		}
		q.After = next
	}
}

func idsOf(list []notify.Stored) []string {
	ids := make([]string, len(list))
	for i, s := range list {
		ids[i] = s.ID
	}
	return ids
}

// sameStored checks that got is want, their data compared decoded
// (PostgreSQL's jsonb keeps JSON normalised, not byte for byte).
func sameStored(t *testing.T, got, want notify.Stored) {
	t.Helper()
	var gotData, wantData any
	if err := json.Unmarshal(got.Data, &gotData); err != nil {
		t.Fatalf("the data read back is not JSON: %s", got.Data)
	}
	if err := json.Unmarshal(want.Data, &wantData); err != nil {
		t.Fatal(err)
	}
	if got.ID != want.ID || got.Type != want.Type || got.NotifiableType != want.NotifiableType || got.NotifiableID != want.NotifiableID ||
		!reflect.DeepEqual(gotData, wantData) || !got.ReadAt.Equal(want.ReadAt) || !got.CreatedAt.Equal(want.CreatedAt) {
		t.Errorf("read back %+v (data %s),\nwant %+v (data %s)", got, got.Data, want, want.Data)
	}
}

func TestStoredIsWrittenOnceAndReadsBackAsWritten(t *testing.T) {
	eachInboxDB(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		inbox := notify.NewInbox(d, apptest.FixedClock(inboxT0))
		first := notify.Stored{ID: "0190c1a2-7b3d-7e4f-8a5b-6c7d8e9f0a1b", Type: "invoice.paid", NotifiableType: "user", NotifiableID: "1",
			Data:      json.RawMessage(`{"invoice_id":"inv-7",  "amount": "12.50", "lines": [1, 2, {"x": null}], "note": "caf\u00e9 \"ok\""}`),
			CreatedAt: inboxT0.Add(1500 * time.Millisecond)}
		if err := notify.InsertStored(ctx, d, first); err != nil {
			t.Fatal(err)
		}
		// A retried delivery, whatever it carries this time, writes nothing.
		retry := first
		retry.Data = json.RawMessage(`{"invoice_id": "inv-8"}`)
		if err := notify.InsertStored(ctx, d, retry); err != nil {
			t.Fatal(err)
		}
		if n := rowCount(t, d); n != 1 {
			t.Fatalf("%d rows after a retried delivery, want 1", n)
		}
		list := all(t, inbox, user1)
		if len(list) != 1 {
			t.Fatalf("listed %d notifications, want 1", len(list))
		}
		sameStored(t, list[0], first)
		if !list[0].ReadAt.IsZero() || list[0].CreatedAt.Location() != time.UTC {
			t.Errorf("read at %v, created at %v: want unread, in UTC", list[0].ReadAt, list[0].CreatedAt)
		}

		// One stored read, with an id not in canonical form: it is kept,
		// and found, in canonical form.
		read := notify.Stored{ID: "0190C1A2-7B3D-7E4F-8A5B-6C7D8E9F0A1C", Type: "invoice.paid", NotifiableType: "user", NotifiableID: "1",
			Data: json.RawMessage(`[]`), ReadAt: inboxT0.Add(time.Hour), CreatedAt: inboxT0}
		if err := notify.InsertStored(ctx, d, read); err != nil {
			t.Fatal(err)
		}
		list = all(t, inbox, user1)
		read.ID = strings.ToLower(read.ID)
		if len(list) != 2 {
			t.Fatalf("listed %d notifications, want 2", len(list))
		}
		sameStored(t, list[0], read)

		for name, bad := range map[string]notify.Stored{
			"an id that is not a UUID": {ID: "42", Type: "t", NotifiableType: "user", NotifiableID: "1", Data: json.RawMessage(`{}`), CreatedAt: inboxT0},
			"data that is not JSON":    {ID: inboxID(1), Type: "t", NotifiableType: "user", NotifiableID: "1", Data: json.RawMessage(`{`), CreatedAt: inboxT0},
			"no notifiable id":         {ID: inboxID(1), Type: "t", NotifiableType: "on-demand", Data: json.RawMessage(`{}`), CreatedAt: inboxT0},
		} {
			if err := notify.InsertStored(ctx, d, bad); err == nil {
				t.Errorf("%s: stored", name)
			}
		}
		if n := rowCount(t, d); n != 2 {
			t.Fatalf("%d rows, want 2", n)
		}
	})
}

func TestStoredJoinsTheUnitOfWork(t *testing.T) {
	eachInboxDB(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		rollback := errors.New("roll back")
		err := d.Transaction(ctx, func(ctx context.Context) error {
			store(t, d, user1, 1)
			if err := notify.InsertStored(ctx, d, notify.Stored{ID: inboxID(2), Type: "t", NotifiableType: "user", NotifiableID: "1",
				Data: json.RawMessage(`{}`), CreatedAt: inboxT0}); err != nil {
				return err
			}
			return rollback
		})
		if !errors.Is(err, rollback) {
			t.Fatal(err)
		}
		if got := idsOf(all(t, notify.NewInbox(d, nil), user1)); !slices.Equal(got, []string{inboxID(1)}) {
			t.Fatalf("after the rollback the inbox holds %v, want only the notification stored outside it", got)
		}
	})
}

func TestInboxListsNewestFirstAPageAtATime(t *testing.T) {
	eachInboxDB(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		clock := apptest.FixedClock(inboxT0.Add(time.Hour))
		inbox := notify.NewInbox(d, clock)
		var want, wantUnread []string // newest first
		for n := 1; n <= 45; n++ {
			store(t, d, user1, 3*n)
			store(t, d, user2, 3*n+1) // interleaved with the notifications of others
			store(t, d, team1, 3*n+2)
			want = append([]string{inboxID(3 * n)}, want...)
			if n%4 != 0 {
				wantUnread = append([]string{inboxID(3 * n)}, wantUnread...)
			}
		}
		var read []string
		for n := 4; n <= 45; n += 4 {
			read = append(read, inboxID(3*n))
		}
		if changed, err := inbox.MarkRead(ctx, user1, read...); err != nil || changed != len(read) {
			t.Fatalf("mark read: %d, %v", changed, err)
		}

		for _, tt := range []struct {
			name  string
			query notify.ListQuery
			want  []string
			sizes []int
		}{
			{"every one", notify.ListQuery{Limit: 20}, want, []int{20, 20, 5}},
			{"the default limit", notify.ListQuery{}, want, []int{20, 20, 5}},
			{"unread", notify.ListQuery{Unread: true, Limit: 20}, wantUnread, []int{20, 14}},
			{"one a page", notify.ListQuery{Unread: true, Limit: 1}, wantUnread, slices.Repeat([]int{1}, 34)},
			{"one page", notify.ListQuery{Limit: 100}, want, []int{45}},
			{"exactly one page", notify.ListQuery{Limit: 45}, want, []int{45}},
		} {
			t.Run(tt.name, func(t *testing.T) {
				var got []string
				var sizes []int
				q := tt.query
				for {
					page, next, err := inbox.List(ctx, user1, q)
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, idsOf(page)...)
					sizes = append(sizes, len(page))
					if next == "" {
						break
					}
					if next != page[len(page)-1].ID {
						t.Fatalf("the cursor %q is not the last of its page, %s", next, page[len(page)-1].ID)
					}
					if len(sizes) > 100 {
						t.Fatal("the pages do not end")
					}
					q.After = next
				}
				if !slices.Equal(sizes, tt.sizes) || !slices.Equal(got, tt.want) {
					t.Fatalf("pages of %v: %v; want pages of %v: %v", sizes, got, tt.sizes, tt.want)
				}
			})
		}

		page, _, err := inbox.List(ctx, user1, notify.ListQuery{Limit: 2})
		if err != nil || len(page) != 2 {
			t.Fatalf("%v, %v", page, err)
		}
		if page[0].Type != "invoice.paid" || page[0].NotifiableType != "user" || page[0].NotifiableID != "1" || !page[0].ReadAt.IsZero() {
			t.Errorf("the newest: %+v", page[0])
		}
		if !page[1].ReadAt.Equal(clock.Now()) { // 3*44: read
			t.Errorf("the second newest was read at %v, want %v", page[1].ReadAt, clock.Now())
		}
		if empty, next, err := inbox.List(ctx, inboxOwner{"user", "3"}, notify.ListQuery{}); err != nil || len(empty) != 0 || next != "" {
			t.Errorf("an empty inbox: %v, %q, %v", empty, next, err)
		}
		// A cursor past the oldest: an empty last page.
		if empty, next, err := inbox.List(ctx, user1, notify.ListQuery{After: inboxID(1)}); err != nil || len(empty) != 0 || next != "" {
			t.Errorf("past the oldest: %v, %q, %v", empty, next, err)
		}
	})
}

func TestInboxRefusesAQueryOutOfBounds(t *testing.T) {
	eachInboxDB(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		inbox := notify.NewInbox(d, nil)
		store(t, d, user1, 1)
		for _, tt := range []struct {
			query notify.ListQuery
			says  string
		}{
			{notify.ListQuery{Limit: 101}, "the limit is 101; want 1 to 100 (0 for the default, 20)"},
			{notify.ListQuery{Limit: -1}, "the limit is -1; want 1 to 100"},
			{notify.ListQuery{After: "not-a-cursor"}, `"not-a-cursor" is not a cursor`},
			{notify.ListQuery{After: "1' OR '1'='1"}, `"1' OR '1'='1" is not a cursor`},
		} {
			page, next, err := inbox.List(ctx, user1, tt.query)
			if !errors.Is(err, notify.ErrInvalidQuery) || !strings.Contains(err.Error(), tt.says) || page != nil || next != "" {
				t.Errorf("%+v: %v, %q, %v; want ErrInvalidQuery saying %q", tt.query, page, next, err, tt.says)
			}
		}
		for _, c := range []struct {
			name string
			call func(ids ...string) (int, error)
		}{ // in this order, each changing the one notification among 1,000 ids
			{"mark read", func(ids ...string) (int, error) { return inbox.MarkRead(ctx, user1, ids...) }},
			{"mark unread", func(ids ...string) (int, error) { return inbox.MarkUnread(ctx, user1, ids...) }},
			{"delete", func(ids ...string) (int, error) { return inbox.Delete(ctx, user1, ids...) }},
		} {
			name, call := c.name, c.call
			if n, err := call(inboxID(1), "x'); DELETE FROM notifications; --"); !errors.Is(err, notify.ErrInvalidQuery) || n != 0 ||
				!strings.Contains(err.Error(), `the id "x'); DELETE FROM notifications; --" is not`) {
				t.Errorf("%s of a malformed id: %d, %v", name, n, err)
			}
			many := make([]string, 1001)
			for k := range many {
				many[k] = inboxID(k)
			}
			if n, err := call(many...); !errors.Is(err, notify.ErrInvalidQuery) || n != 0 || !strings.Contains(err.Error(), "1001 ids; want at most 1000") {
				t.Errorf("%s of 1,001 ids: %d, %v", name, n, err)
			}
			if n, err := call(); n != 0 || err != nil {
				t.Errorf("%s of no ids: %d, %v", name, n, err)
			}
			if n, err := call(many[:1000]...); err != nil || n != 1 {
				t.Errorf("%s of 1,000 ids: %d, %v", name, n, err)
			}
		}
		if _, err := inbox.UnreadCount(ctx, notify.Route(notify.Mail, "ops@example.com")); err == nil || errors.Is(err, notify.ErrInvalidQuery) {
			t.Errorf("the unread count of an on-demand notifiable: %v", err)
		}
		if _, _, err := inbox.List(ctx, nil, notify.ListQuery{}); err == nil {
			t.Error("listed the notifications of no notifiable")
		}
	})
}

// TestInboxRefusesANotifiableNoDatabaseStores: a notifiable id with a NUL
// byte or invalid UTF-8, as a handler might take from a path
// (/users/ada%00/notifications), is an invalid query that names it, on
// both databases, not an error of PostgreSQL's with its SQL.
func TestInboxRefusesANotifiableNoDatabaseStores(t *testing.T) {
	eachInboxDB(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		inbox := notify.NewInbox(d, nil)
		store(t, d, user1, 1)
		for _, tt := range []struct {
			who  inboxOwner
			says string
		}{
			{inboxOwner{"user", user1.id + "\x00"}, `the notifiable id "` + user1.id + `\x00" has a NUL byte or is not UTF-8`},
			{inboxOwner{"user", "\x00"}, `the notifiable id "\x00" has a NUL byte`},
			{inboxOwner{"user", "ada\xff"}, `the notifiable id "ada\xff" has a NUL byte or is not UTF-8`},
			{inboxOwner{"us\x00er", user1.id}, `the notifiable type "us\x00er" has a NUL byte or is not UTF-8`},
		} {
			calls := map[string]func() error{
				"list notifications":          func() error { _, _, err := inbox.List(ctx, tt.who, notify.ListQuery{}); return err },
				"count unread notifications":  func() error { _, err := inbox.UnreadCount(ctx, tt.who); return err },
				"mark all notifications read": func() error { _, err := inbox.MarkAllRead(ctx, tt.who); return err },
				"mark notifications read":     func() error { _, err := inbox.MarkRead(ctx, tt.who, inboxID(1)); return err },
				"delete notifications":        func() error { _, err := inbox.Delete(ctx, tt.who, inboxID(1)); return err },
			}
			for what, call := range calls {
				want := "notify: " + what + ": invalid query: " + tt.says
				if err := call(); !errors.Is(err, notify.ErrInvalidQuery) || !strings.HasPrefix(err.Error(), want) {
					t.Errorf("%s of %q: %v\nwant ErrInvalidQuery: %s…", what, tt.who.id, err, want)
				}
			}
		}
		if n := unreadOf(t, inbox, user1); n != 1 {
			t.Errorf("after the refusals, %d unread, want the 1 stored", n)
		}
	})
}

// unreadOf returns how many notifications of who are unread.
func unreadOf(t *testing.T, inbox *notify.Inbox, who notify.Notifiable) int {
	t.Helper()
	n, err := inbox.UnreadCount(context.Background(), who)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestInboxIsScopedToItsNotifiable(t *testing.T) {
	eachInboxDB(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		inbox := notify.NewInbox(d, apptest.FixedClock(inboxT0))
		mine := []string{store(t, d, user1, 1).ID, store(t, d, user1, 2).ID}
		theirs := []string{store(t, d, user2, 3).ID, store(t, d, user2, 4).ID}
		teams := []string{store(t, d, team1, 5).ID} // user1's id, as a team
		others := append(slices.Clone(theirs), teams...)

		for name, intruder := range map[string]notify.Notifiable{"user 1": user1, "user 2": user2} {
			victims := others
			if name == "user 2" {
				victims = append(slices.Clone(mine), teams...)
			}
			if n, err := inbox.MarkRead(ctx, intruder, victims...); n != 0 || err != nil {
				t.Errorf("%s marked read %d of another's, %v", name, n, err)
			}
			if n, err := inbox.Delete(ctx, intruder, victims...); n != 0 || err != nil {
				t.Errorf("%s deleted %d of another's, %v", name, n, err)
			}
		}
		if n, err := inbox.MarkRead(ctx, team1, mine...); n != 0 || err != nil {
			t.Errorf("team 1 marked read %d of user 1's, %v", n, err)
		}
		if u1, u2, tm := unreadOf(t, inbox, user1), unreadOf(t, inbox, user2), unreadOf(t, inbox, team1); u1 != 2 || u2 != 2 || tm != 1 {
			t.Fatalf("unread: user 1 %d, user 2 %d, team 1 %d; want 2, 2, 1", u1, u2, tm)
		}

		// Read by their own, then marked unread by another: they stay read.
		if n, err := inbox.MarkRead(ctx, user2, theirs...); n != 2 || err != nil {
			t.Fatalf("user 2 marked read %d of its own, %v", n, err)
		}
		if n, err := inbox.MarkRead(ctx, team1, teams...); n != 1 || err != nil {
			t.Fatalf("team 1 marked read %d of its own, %v", n, err)
		}
		if n, err := inbox.MarkUnread(ctx, user1, others...); n != 0 || err != nil {
			t.Errorf("user 1 marked unread %d of another's, %v", n, err)
		}
		if n, err := inbox.MarkAllRead(ctx, user1); n != 2 || err != nil {
			t.Errorf("user 1 marked all read: %d, %v; want its own 2", n, err)
		}
		if n, err := inbox.MarkUnread(ctx, user1, mine...); n != 2 || err != nil {
			t.Errorf("user 1 marked unread %d of its own, %v", n, err)
		}
		if u1, u2, tm := unreadOf(t, inbox, user1), unreadOf(t, inbox, user2), unreadOf(t, inbox, team1); u1 != 2 || u2 != 0 || tm != 0 {
			t.Fatalf("unread: user 1 %d, user 2 %d, team 1 %d; want 2, 0, 0", u1, u2, tm)
		}
		if n := len(all(t, inbox, user2)) + len(all(t, inbox, team1)); n != 3 || rowCount(t, d) != 5 {
			t.Fatalf("the others hold %d notifications, want 3; the table %d rows, want 5", n, rowCount(t, d))
		}
	})
}

func TestInboxMarksAndDeletes(t *testing.T) {
	eachInboxDB(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		clock := apptest.FixedClock(inboxT0.Add(time.Hour + 123*time.Millisecond + 456*time.Microsecond))
		inbox := notify.NewInbox(d, clock)
		var ids []string
		for n := 1; n <= 5; n++ {
			ids = append(ids, store(t, d, user1, n).ID)
		}
		store(t, d, user2, 6)
		if n := unreadOf(t, inbox, user1); n != 5 {
			t.Fatalf("%d unread, want 5", n)
		}

		if n, err := inbox.MarkRead(ctx, user1, ids[0], ids[1], ids[1]); n != 2 || err != nil {
			t.Fatalf("mark read: %d, %v; want 2", n, err)
		}
		readAt := clock.Now().Truncate(time.Millisecond)
		clock.Advance(time.Minute)
		// Already read: not changed, not counted, and not stamped again.
		if n, err := inbox.MarkRead(ctx, user1, ids[0], ids[2]); n != 1 || err != nil {
			t.Fatalf("mark read again: %d, %v; want 1", n, err)
		}
		list := all(t, inbox, user1) // newest first: ids[4] … ids[0]
		if !list[4].ReadAt.Equal(readAt) || !list[3].ReadAt.Equal(readAt) || !list[2].ReadAt.Equal(readAt.Add(time.Minute)) || !list[1].ReadAt.IsZero() {
			t.Fatalf("read at %v, %v, %v, %v; want %v twice, a minute later, unread", list[4].ReadAt, list[3].ReadAt, list[2].ReadAt, list[1].ReadAt, readAt)
		}
		if n := unreadOf(t, inbox, user1); n != 2 {
			t.Fatalf("%d unread, want 2", n)
		}
		if page, _, err := inbox.List(ctx, user1, notify.ListQuery{Unread: true}); err != nil || !slices.Equal(idsOf(page), []string{ids[4], ids[3]}) {
			t.Fatalf("unread: %v, %v", idsOf(page), err)
		}

		if n, err := inbox.MarkUnread(ctx, user1, ids[0], ids[4]); n != 1 || err != nil {
			t.Fatalf("mark unread: %d, %v; want 1 (the other is unread)", n, err)
		}
		if n := unreadOf(t, inbox, user1); n != 3 {
			t.Fatalf("%d unread, want 3", n)
		}
		if n, err := inbox.MarkAllRead(ctx, user1); n != 3 || err != nil {
			t.Fatalf("mark all read: %d, %v; want 3", n, err)
		}
		if n, err := inbox.MarkAllRead(ctx, user1); n != 0 || err != nil {
			t.Fatalf("mark all read again: %d, %v; want 0", n, err)
		}
		if n, u2 := unreadOf(t, inbox, user1), unreadOf(t, inbox, user2); n != 0 || u2 != 1 {
			t.Fatalf("unread: %d of user 1, %d of user 2; want 0, 1", n, u2)
		}

		if n, err := inbox.Delete(ctx, user1, ids[1], ids[3], ids[3], inboxID(99)); n != 2 || err != nil {
			t.Fatalf("delete: %d, %v; want 2", n, err)
		}
		if got := idsOf(all(t, inbox, user1)); !slices.Equal(got, []string{ids[4], ids[2], ids[0]}) {
			t.Fatalf("after the delete: %v", got)
		}
		if n, err := inbox.Delete(ctx, user1, ids[1]); n != 0 || err != nil {
			t.Fatalf("delete again: %d, %v; want 0", n, err)
		}
		if n := rowCount(t, d); n != 4 {
			t.Fatalf("%d rows, want 4", n)
		}
	})
}

func TestInboxPrunesWhatWasReadLongAgo(t *testing.T) {
	eachInboxDB(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		clock := apptest.FixedClock(inboxT0)
		inbox := notify.NewInbox(d, clock)
		// Read on day 0, 1, 2 and 3 by each of three notifiables; one
		// unread of each, stored before them all.
		kept := map[inboxOwner][]string{}
		for k, who := range []inboxOwner{user1, user2, team1} {
			old := store(t, d, who, 100*k)
			kept[who] = append(kept[who], old.ID)
			for day := range 4 {
				clock.Set(inboxT0.Add(time.Duration(day) * 24 * time.Hour))
				s := store(t, d, who, 100*k+1+day)
				if n, err := inbox.MarkRead(ctx, who, s.ID); n != 1 || err != nil {
					t.Fatal(n, err)
				}
				if day >= 2 {
					kept[who] = append(kept[who], s.ID)
				}
			}
		}
		// Read before day 2: days 0 and 1 go, day 2 (read at the bound) stays.
		n, err := inbox.Prune(ctx, inboxT0.Add(48*time.Hour))
		if err != nil || n != 6 {
			t.Fatalf("prune: %d, %v; want 6", n, err)
		}
		for who, want := range kept {
			got := idsOf(all(t, inbox, who))
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("%v keeps %v, want %v", who, got, want)
			}
			if unreadOf(t, inbox, who) != 1 {
				t.Errorf("%v lost its unread notification", who)
			}
		}
		if n, err := inbox.Prune(ctx, inboxT0.Add(48*time.Hour)); n != 0 || err != nil {
			t.Fatalf("prune again: %d, %v; want 0", n, err)
		}
	})
}

// TestPruneDeletesInBatches: more read notifications than a batch go, a
// batch to a transaction; the unread one stays.
func TestPruneDeletesInBatches(t *testing.T) {
	eachInboxDB(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		inbox := notify.NewInbox(d, apptest.FixedClock(inboxT0.Add(time.Hour)))
		who := inboxOwner{"user", "ada"}
		for n := range notify.PruneBatch + 200 {
			store(t, d, who, n+1)
		}
		if n, err := inbox.MarkAllRead(ctx, who); n != notify.PruneBatch+200 || err != nil {
			t.Fatal(n, err)
		}
		unread := store(t, d, who, notify.PruneBatch+201)
		if n, err := inbox.Prune(ctx, inboxT0.Add(2*time.Hour)); n != notify.PruneBatch+200 || err != nil {
			t.Fatalf("prune: %d, %v; want %d", n, err, notify.PruneBatch+200)
		}
		if got := idsOf(all(t, inbox, who)); !slices.Equal(got, []string{unread.ID}) {
			t.Fatalf("left %v, want the unread one", got)
		}
	})
}

func TestInboxWritesJoinTheUnitOfWork(t *testing.T) {
	eachInboxDB(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		inbox := notify.NewInbox(d, apptest.FixedClock(inboxT0))
		for n := 1; n <= 3; n++ {
			store(t, d, user1, n)
		}
		rollback := errors.New("roll back")
		err := d.Transaction(ctx, func(ctx context.Context) error {
			if n, err := inbox.MarkAllRead(ctx, user1); n != 3 || err != nil {
				t.Errorf("mark all read: %d, %v", n, err)
			}
			if n, err := inbox.Delete(ctx, user1, inboxID(1)); n != 1 || err != nil {
				t.Errorf("delete: %d, %v", n, err)
			}
			// Reads in the unit see its writes.
			if n, err := inbox.UnreadCount(ctx, user1); n != 0 || err != nil {
				t.Errorf("unread in the unit of work: %d, %v; want 0", n, err)
			}
			if page, _, err := inbox.List(ctx, user1, notify.ListQuery{}); len(page) != 2 || err != nil {
				t.Errorf("listed in the unit of work: %d, %v; want 2", len(page), err)
			}
			return rollback
		})
		if !errors.Is(err, rollback) {
			t.Fatal(err)
		}
		if n := unreadOf(t, inbox, user1); n != 3 || rowCount(t, d) != 3 {
			t.Fatalf("after the rollback: %d unread, %d rows; want 3, 3", n, rowCount(t, d))
		}

		// A unit of work that has not begun its transaction: a read does not begin it.
		err = d.Transaction(ctx, func(ctx context.Context) error {
			if n, err := inbox.UnreadCount(ctx, user1); n != 3 || err != nil {
				t.Errorf("unread: %d, %v", n, err)
			}
			if db.UnitOfWorkFrom(ctx).Began() {
				t.Error("counting began the unit's transaction")
			}
			n, err := inbox.MarkRead(ctx, user1, inboxID(2))
			if n != 1 || err != nil {
				t.Errorf("mark read: %d, %v", n, err)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if n := unreadOf(t, inbox, user1); n != 2 {
			t.Fatalf("after the commit: %d unread, want 2", n)
		}
	})
}

// TestPruneCommandAndJob: notify:prune deletes the notifications read
// longer ago than its flag says; the job notify.prune does the same from a
// worker, and fails at once without a positive age.
func TestPruneCommandAndJob(t *testing.T) {
	url := dbtest.SQLiteURL(t)
	d := migratedInboxDB(t, url)
	clock := apptest.FixedClock(inboxT0.Add(40 * 24 * time.Hour))
	inbox := notify.NewInbox(d, apptest.FixedClock(inboxT0))
	who := inboxOwner{"user", "ada"}
	store(t, d, who, 1)
	if _, err := inbox.MarkAllRead(context.Background(), who); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		a := app.New(config.Module(config.Sources{Overrides: map[string]any{"database.url": url}}), app.WithClock(clock),
			db.Module(), queue.Module(), notify.Module())
		a.Name, a.Stdout, a.Stderr = "crm", &out, &out
		err := a.Run(context.Background(), args)
		return out.String(), err
	}
	if _, err := run("migrate"); err != nil {
		t.Fatal(err)
	}
	if out, err := run("notify:prune", "--read-older-than", "1000h"); err != nil || out != "Deleted 0 notification(s) read more than 1000h0m0s ago.\n" {
		t.Fatalf("notify:prune 1000h: %q, %v", out, err)
	}
	if _, err := run("queue:dispatch", "notify.prune", `{"read_older_than_hours": 720}`); err != nil {
		t.Fatal(err)
	}
	if _, err := run("queue:dispatch", "notify.prune", `{}`); err != nil {
		t.Fatal(err)
	}
	out, err := run("queue:work", "--stop-when-empty")
	if err != nil || !strings.Contains(out, "Processed 2 job attempt(s): 1 succeeded, 0 released for retry, 1 failed.") ||
		!strings.Contains(out, "notify.prune: read_older_than_hours is 0; want more than 0, such as 720") {
		t.Fatalf("queue:work: %q, %v", out, err)
	}
	if n, err := inbox.UnreadCount(context.Background(), who); n != 0 || err != nil || len(all(t, inbox, who)) != 0 {
		t.Fatalf("the read notification is still there: %v", err)
	}
	if _, err := run("notify:prune", "--read-older-than", "0s"); err == nil || err.Error() != "notify:prune: --read-older-than is 0s; want more than 0, such as 720h" {
		t.Fatalf("notify:prune 0s: %v", err)
	}
}
