package driver_test

import (
	"math"
	"slices"
	"testing"

	"github.com/navree/navree/db"
	"github.com/navree/navree/queue/internal/driver"
)

// TestBucketsAreHalfOctaves: every duration falls in the bucket whose
// floor is the greatest not above it, the floors are 100 µs times powers
// of √2 (to within a microsecond), and the last bucket holds the rest.
func TestBucketsAreHalfOctaves(t *testing.T) {
	for b := 1; b < driver.Buckets; b++ {
		want := 100 * math.Pow(math.Sqrt2, float64(b-1))
		if got := float64(driver.BucketFloor(b)); math.Abs(got-want) > 1+want*2e-5 {
			t.Errorf("BucketFloor(%d) = %v, want %.0f", b, got, want)
		}
	}
	check := func(us int64) {
		b := driver.Bucket(us)
		if us < 100 && b != 0 || us >= 100 && (driver.BucketFloor(b) > us || b < driver.Buckets-1 && us >= driver.BucketFloor(b+1)) {
			t.Fatalf("Bucket(%d) = %d, whose floors are %d and %d", us, b, driver.BucketFloor(b), driver.BucketFloor(b+1))
		}
	}
	for us := int64(0); us < 100_000; us++ {
		check(us)
	}
	for b := 1; b < driver.Buckets; b++ {
		for _, d := range []int64{-1, 0, 1} {
			check(driver.BucketFloor(b) + d)
		}
	}
	if b := driver.Bucket(math.MaxInt64); b != driver.Buckets-1 {
		t.Fatalf("Bucket(max) = %d", b)
	}
	if day := int64(86_400_000_000); driver.Bucket(day) >= driver.Buckets-1 {
		t.Fatalf("a day falls in the last, open bucket")
	}
}

// TestTimingsAddUpAndAgeOut: AddThroughput adds timings to those of the
// same minute, queue, type, kind and bucket, Timings reads them from a
// minute on, of a queue and a type, and the timings of minutes before
// keepFrom are deleted.
func TestTimingsAddUpAndAgeOut(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		add := func(keepFrom int64, timings ...driver.Timing) {
			t.Helper()
			if err := s.AddThroughput(ctx, nil, timings, keepFrom); err != nil {
				t.Fatal(err)
			}
		}
		run := driver.Timing{Queue: "mail", Name: "mail.send", Minute: 60_000, Bucket: 7, Count: 2}
		wait := run
		wait.Wait, wait.Bucket, wait.Count = true, 30, 1
		other := driver.Timing{Queue: "default", Name: "contacts.export", Minute: 120_000, Bucket: 9, Count: 5}
		add(0, run, wait, other)
		run.Count = 3
		add(0, run)
		got, err := s.Timings(ctx, 0, "mail", "")
		want := []driver.Timing{{Queue: "mail", Name: "mail.send", Minute: 60_000, Bucket: 7, Count: 5}, wait}
		slices.SortFunc(got, func(a, b driver.Timing) int { return a.Bucket - b.Bucket })
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("Timings(mail) = %+v, %v; want %+v", got, err, want)
		}
		if got, _ := s.Timings(ctx, 0, "", "contacts.export"); !slices.Equal(got, []driver.Timing{other}) {
			t.Fatalf("Timings(contacts.export) = %+v", got)
		}
		if got, _ := s.Timings(ctx, 120_000, "", ""); !slices.Equal(got, []driver.Timing{other}) {
			t.Fatalf("Timings(from 120000) = %+v", got)
		}
		add(120_000, driver.Timing{Queue: "mail", Name: "mail.send", Minute: 180_000, Count: 1})
		if got, _ := s.Timings(ctx, 0, "mail", ""); len(got) != 1 || got[0].Minute != 180_000 {
			t.Fatalf("after keepFrom 120000: %+v; want the minute 60000 deleted", got)
		}
	})
}
