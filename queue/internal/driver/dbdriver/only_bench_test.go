package dbdriver

import (
	"context"
	"fmt"
	"testing"

	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/migrations"
	"github.com/navree/navree/queue/internal/backoff"
	"github.com/navree/navree/queue/internal/driver"
)

// BenchmarkOnlyKnownTypes measures what a worker of only known types
// pays for the jobs of other types waiting before its own: a search from
// the first job (a full sweep) that finds none of its types among
// 10,000 of another, and queue:status's count of them (Unknown): go test
// ./queue/internal/driver/dbdriver -run '^$' -bench OnlyKnownTypes.
func BenchmarkOnlyKnownTypes(b *testing.B) {
	for _, name := range []string{"sqlite", "postgres"} {
		url := dbtest.SQLiteURL(b)
		if name == "postgres" {
			url = dbtest.PostgresURL(b)
		}
		d := dbtest.Open(b, url)
		ctx := context.Background()
		if _, err := db.NewMigrator(d, []db.MigrationSet{{Name: "queue", FS: migrations.Queue}}).Migrate(ctx); err != nil {
			b.Fatal(err)
		}
		var drv driver.Driver = newSQLite(d)
		if name == "postgres" {
			drv = newPostgres(d)
		}
		jobs := make([]*driver.Job, 10_000)
		for i := range jobs {
			jobs[i] = &driver.Job{ID: fmt.Sprintf("01900000-0000-7000-8000-%012d", i), Queue: "only", Name: "other.type", Payload: []byte(`{}`),
				MaxAttempts: 3, Backoff: backoff.Exponential(1000, 300_000), TimeoutMs: 60_000, AvailableAt: 1000, CreatedAt: 1}
		}
		if _, err := drv.InsertMany(ctx, nil, jobs, 1000); err != nil {
			b.Fatal(err)
		}
		known := driver.NewNames([]string{"crm.export", "crm.sync", "mail.send"})
		b.Run(name+"/sweep", func(b *testing.B) {
			for b.Loop() {
				if got, err := drv.Reserve(ctx, driver.Reservation{Queue: "only", Now: 2000, At: 2000, Limit: 100, Only: known}); err != nil || len(got) != 0 {
					b.Fatal(got, err)
				}
			}
		})
		b.Run(name+"/unknown", func(b *testing.B) {
			for b.Loop() {
				if got, err := drv.Unknown(ctx, "only", known.List(), 10_000); err != nil || got["other.type"] != 10_000 {
					b.Fatal(got, err)
				}
			}
		})
	}
}
