package driver_test

import (
	"math"
	"testing"

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
