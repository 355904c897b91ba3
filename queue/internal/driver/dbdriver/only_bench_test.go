package dbdriver

import (
	"context"
	"testing"

	"github.com/navree/navree/queue/internal/driver"
)

// BenchmarkOnlyKnownTypes measures what a worker of only known types
// pays for the jobs of other types waiting before its own: a search from
// the first job (a full sweep) that finds none of its types among
// 10,000 of another, and queue:status's count of them (Unknown): go test
// ./queue/internal/driver/dbdriver -run '^$' -bench OnlyKnownTypes.
func BenchmarkOnlyKnownTypes(b *testing.B) {
	for _, name := range []string{"sqlite", "postgres"} {
		drv, _ := openDriver(b, name)
		ctx := context.Background()
		jobs := make([]*driver.Job, 10_000)
		for i := range jobs {
			jobs[i] = job(i)
			jobs[i].Queue, jobs[i].Name, jobs[i].AvailableAt = "only", "other.type", 1000
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
