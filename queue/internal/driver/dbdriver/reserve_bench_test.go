package dbdriver

import (
	"context"
	"testing"

	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/queue/internal/driver"
)

// BenchmarkReserveWithABacklog measures a reservation of 4 jobs and
// their completion on PostgreSQL with a backlog in analyzed statistics
// (as autovacuum leaves a busy table): the statement of size 4, and the
// one with LIMIT a parameter (what a reservation over plan.MaxSize
// runs), which the server plans anew at every execution: go test
// ./queue/internal/driver/dbdriver -run '^$' -bench ReserveWithABacklog
// -benchtime 5000x.
func BenchmarkReserveWithABacklog(b *testing.B) {
	for _, shape := range []string{"sized", "limit-parameter"} {
		b.Run(shape, func(b *testing.B) {
			p := newPostgres(migrated(b, dbtest.MigratedPostgresURL(b, queueSets...)))
			ctx := context.Background()
			backlog(b, p, 4*b.N+20_000, "VACUUM ANALYZE jobs")
			var from int64
			b.ResetTimer()
			for range b.N {
				r := driver.Reservation{Queue: "default", Now: 1 << 40, From: from, Limit: 4}
				var got []*driver.Job
				var err error
				if shape == "sized" {
					got, err = p.Reserve(ctx, r)
				} else {
					stmt, args := withLimitParameter(p, r)
					got, err = p.reserveWith(ctx, stmt, args)
				}
				if err != nil || len(got) != 4 {
					b.Fatal(len(got), err)
				}
				done := make([]driver.Attempt, len(got))
				for i, j := range got {
					done[i] = driver.Attempt{ID: j.ID, Attempt: j.Attempts}
					from = max(from, j.AvailableAt)
				}
				if _, err := p.Complete(ctx, done, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
