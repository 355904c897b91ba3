package db_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
)

func migrationIDs(ms []db.Migration) []string {
	ids := []string{}
	for _, m := range ms {
		ids = append(ids, m.ID())
	}
	return ids
}

func tableExists(t *testing.T, d *db.DB, name string) bool {
	t.Helper()
	_, err := d.ExecContext(context.Background(), "SELECT 1 FROM "+name+" LIMIT 1")
	return err == nil
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func contactsSet() fstest.MapFS {
	return fstest.MapFS{
		"0001_create_contacts.up.sql":   {Data: []byte("CREATE TABLE contacts (id INTEGER PRIMARY KEY, name TEXT NOT NULL);\nCREATE INDEX contacts_name ON contacts (name);")},
		"0001_create_contacts.down.sql": {Data: []byte("DROP TABLE contacts;")},
		// The dialect's own file takes the place of the plain one.
		"0002_create_events.up.sql":          {Data: []byte("this plain file must not run;")},
		"0002_create_events.up.sqlite.sql":   {Data: []byte("CREATE TABLE events (id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER);")},
		"0002_create_events.up.postgres.sql": {Data: []byte("CREATE TABLE events (id BIGSERIAL PRIMARY KEY, at BIGINT);")},
		"0002_create_events.down.sql":        {Data: []byte("DROP TABLE events;")},
		"README.md":                          {Data: []byte("not a migration")},
	}
}

func TestMigrations(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, url string) {
		ctx := context.Background()
		d := dbtest.Open(t, url)
		contacts := contactsSet()
		audit := fstest.MapFS{
			"0001_create_audit.up.sql":   {Data: []byte("CREATE TABLE audit (msg TEXT);")},
			"0001_create_audit.down.sql": {Data: []byte("DROP TABLE audit;")},
		}
		m := db.NewMigrator(d, []db.MigrationSet{{Name: "contacts", FS: contacts}, {Name: "audit", FS: audit}})

		var progress []string // what migrate's status line shows
		applied, err := m.MigrateWithProgress(ctx, func(next db.Migration, done, total int) {
			progress = append(progress, fmt.Sprintf("%s %d/%d", next.ID(), done, total))
		})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"audit/0001_create_audit", "contacts/0001_create_contacts", "contacts/0002_create_events"}
		if !equal(migrationIDs(applied), want) {
			t.Fatalf("applied %v, want %v (sets in name order)", migrationIDs(applied), want)
		}
		if want := []string{"audit/0001_create_audit 0/3", "contacts/0001_create_contacts 1/3", "contacts/0002_create_events 2/3"}; !equal(progress, want) {
			t.Fatalf("progress %v, want %v: each migration before it is applied", progress, want)
		}
		for _, table := range []string{"contacts", "events", "audit"} {
			if !tableExists(t, d, table) {
				t.Fatalf("table %s missing after migrate", table)
			}
		}

		again, err := m.Migrate(ctx)
		if err != nil || len(again) != 0 {
			t.Fatalf("second migrate applied %v, %v; want nothing", migrationIDs(again), err)
		}

		// A new migration lands in batch 2.
		contacts["0003_add_email.up.sql"] = &fstest.MapFile{Data: []byte("ALTER TABLE contacts ADD COLUMN email TEXT;")}
		contacts["0003_add_email.down.sql"] = &fstest.MapFile{Data: []byte("ALTER TABLE contacts DROP COLUMN email;")}
		applied, err = m.Migrate(ctx)
		if err != nil || !equal(migrationIDs(applied), []string{"contacts/0003_add_email"}) {
			t.Fatalf("migrate applied %v, %v", migrationIDs(applied), err)
		}
		status, err := m.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var batches []int
		for _, st := range status {
			if !st.Applied {
				t.Fatalf("%s pending after migrate", st.ID())
			}
			batches = append(batches, st.Batch)
		}
		if len(batches) != 4 || batches[0] != 1 || batches[1] != 1 || batches[2] != 1 || batches[3] != 2 {
			t.Fatalf("batches %v, want [1 1 1 2]", batches)
		}

		undone, err := m.Rollback(ctx)
		if err != nil || !equal(migrationIDs(undone), []string{"contacts/0003_add_email"}) {
			t.Fatalf("rollback undid %v, %v; want only the last batch", migrationIDs(undone), err)
		}
		if _, err := d.ExecContext(ctx, "SELECT email FROM contacts"); err == nil {
			t.Fatal("contacts.email survived its rollback")
		}
		undone, err = m.Rollback(ctx)
		want = []string{"contacts/0002_create_events", "contacts/0001_create_contacts", "audit/0001_create_audit"}
		if err != nil || !equal(migrationIDs(undone), want) {
			t.Fatalf("rollback undid %v, %v; want %v", migrationIDs(undone), err, want)
		}
		for _, table := range []string{"contacts", "events", "audit"} {
			if tableExists(t, d, table) {
				t.Fatalf("table %s still there after rollback", table)
			}
		}
		status, _ = m.Status(ctx)
		for _, st := range status {
			if st.Applied {
				t.Fatalf("%s still applied", st.ID())
			}
		}
		if undone, err := m.Rollback(ctx); err != nil || len(undone) != 0 {
			t.Fatalf("rollback with nothing applied: %v, %v", migrationIDs(undone), err)
		}
	})
}

func TestFailingMigrationAppliesNothing(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, url string) {
		ctx := context.Background()
		d := dbtest.Open(t, url)
		m := db.NewMigrator(d, []db.MigrationSet{{Name: "app", FS: fstest.MapFS{
			"0001_ok.up.sql":     {Data: []byte("CREATE TABLE ok (x INTEGER);")},
			"0002_broken.up.sql": {Data: []byte("CREATE TABLE broken (;")},
		}}})
		if _, err := m.Migrate(ctx); err == nil || !strings.Contains(err.Error(), "app/0002_broken") {
			t.Fatalf("error = %v, want one naming app/0002_broken", err)
		}
		if tableExists(t, d, "ok") {
			t.Fatal("the batch was half applied")
		}
	})
}

func TestBadMigrationFilesAreNamed(t *testing.T) {
	d := dbtest.Open(t, dbtest.SQLiteURL(t))
	tests := []struct {
		files fstest.MapFS
		want  string
	}{
		{fstest.MapFS{"create.up.sql": {Data: []byte("x")}}, "app/create.up.sql: the name must start with a version number"},
		{fstest.MapFS{"0001_x.sideways.sql": {Data: []byte("x")}}, "app/0001_x.sideways.sql: want NAME.up.sql"},
		{fstest.MapFS{"0001_x.up.mysql.sql": {Data: []byte("x")}}, `unknown dialect "mysql"`},
		{fstest.MapFS{"0001_x.down.sql": {Data: []byte("x")}}, "app/0001_x has no up file for sqlite"},
		{fstest.MapFS{"0001_a.up.sql": {Data: []byte("x")}, "1_b.up.sql": {Data: []byte("x")}}, "share version"},
	}
	for _, tt := range tests {
		_, err := db.NewMigrator(d, []db.MigrationSet{{Name: "app", FS: tt.files}}).Migrate(context.Background())
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("error = %v, want it to contain %q", err, tt.want)
		}
	}
}

// TestConcurrentMigrate runs migrate from four connections pools at once,
// as four processes would: one applies the set, the others find it done.
func TestConcurrentMigrate(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, url string) {
		var wg sync.WaitGroup
		results := make(chan int, 4)
		for range 4 {
			d := dbtest.Open(t, url)
			m := db.NewMigrator(d, []db.MigrationSet{{Name: "contacts", FS: contactsSet()}})
			wg.Go(func() {
				applied, err := m.Migrate(context.Background())
				if err != nil {
					t.Error(err)
				}
				results <- len(applied)
			})
		}
		wg.Wait()
		close(results)
		total := 0
		for n := range results {
			total += n
		}
		if total != 2 {
			t.Fatalf("the migrations were applied %d times in all, want 2 (once each)", total)
		}
		d := dbtest.Open(t, url)
		var rows int
		if err := d.QueryRowContext(context.Background(), "SELECT count(*) FROM navree_migrations").Scan(&rows); err != nil || rows != 2 {
			t.Fatalf("navree_migrations has %d rows (%v), want 2", rows, err)
		}
	})
}

// TestPending: the migrations that have not run, all of them on a database
// migrate never ran on, read without creating navree_migrations; none
// once migrated; a new one after.
func TestPending(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, url string) {
		ctx := context.Background()
		d := dbtest.Open(t, url)
		contacts := contactsSet()
		m := db.NewMigrator(d, []db.MigrationSet{{Name: "contacts", FS: contacts}})
		pending, err := m.Pending(ctx)
		if want := []string{"contacts/0001_create_contacts", "contacts/0002_create_events"}; err != nil || !equal(migrationIDs(pending), want) {
			t.Fatalf("pending on a new database: %v, %v; want %v", migrationIDs(pending), err, want)
		}
		if tableExists(t, d, "navree_migrations") {
			t.Fatal("Pending created navree_migrations")
		}
		if _, err := m.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		if pending, err := m.Pending(ctx); err != nil || len(pending) != 0 {
			t.Fatalf("pending once migrated: %v, %v; want none", migrationIDs(pending), err)
		}
		contacts["0003_add_email.up.sql"] = &fstest.MapFile{Data: []byte("ALTER TABLE contacts ADD COLUMN email TEXT;")}
		if pending, err := m.Pending(ctx); err != nil || !equal(migrationIDs(pending), []string{"contacts/0003_add_email"}) {
			t.Fatalf("pending after a new migration: %v, %v", migrationIDs(pending), err)
		}
	})
}
