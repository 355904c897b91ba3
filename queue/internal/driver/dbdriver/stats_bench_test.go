package dbdriver

import (
	"context"
	"testing"

	"github.com/navree/navree/queue/internal/benchdata"
	"github.com/navree/navree/queue/internal/driver"
)

// BenchmarkStats measures Stats on a million jobs and 100,000 failed
// ones (queue:status reads it): go test ./queue/internal/driver/dbdriver
// -run '^$' -bench Stats.
func BenchmarkStats(b *testing.B) {
	for _, name := range []string{"sqlite", "postgres"} {
		b.Run(name, func(b *testing.B) {
			drv, d := openDriver(b, name)
			ctx := context.Background()
			for _, stmt := range benchdata.MillionJobs[name] {
				if _, err := d.DB.DB.ExecContext(ctx, stmt); err != nil {
					b.Fatalf("%s: %v", stmt, err)
				}
			}
			var stats []driver.Stats
			for b.Loop() {
				var err error
				if stats, err = drv.Stats(ctx, 10_000_000, 10_000_000, 100_001); err != nil {
					b.Fatal(err)
				}
			}
			b.Logf("%+v", stats)
		})
	}
}
