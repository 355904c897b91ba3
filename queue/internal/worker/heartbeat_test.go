package worker

import (
	"testing"
	"time"
)

// TestTheLeaseHoldsWhileTheRegistryHasAPeriodLeft: a worker reserves jobs
// as itself while the registry, which counts it gone its rescue time
// after its last beat, has at least a period left to hear from it; with
// no beat, or past that, it reserves them as a worker not registered.
func TestTheLeaseHoldsWhileTheRegistryHasAPeriodLeft(t *testing.T) {
	tests := []struct {
		name          string
		every, rescue time.Duration
		since         time.Duration // since the last beat; <0: none
		want          string
	}{
		{"no beat yet", 5 * time.Second, 15 * time.Second, -1, ""},
		{"just beat", 5 * time.Second, 15 * time.Second, 0, "w1"},
		{"default period, a beat missed", 5 * time.Second, 15 * time.Second, 9 * time.Second, "w1"},
		{"default period, two missed", 5 * time.Second, 15 * time.Second, 10 * time.Second, ""},
		{"short period, many missed", 10 * time.Millisecond, 15 * time.Second, 14 * time.Second, "w1"},
		{"short period, a period before gone", 10 * time.Millisecond, 15 * time.Second, 15*time.Second - 10*time.Millisecond, ""},
		{"no rescue time: two periods", 5 * time.Second, 0, 10 * time.Second, ""},
		{"no rescue time, within two periods", 5 * time.Second, 0, 9 * time.Second, "w1"},
	}
	for _, tt := range tests {
		l := newLease("w1", tt.every, tt.rescue)
		if tt.since >= 0 {
			at := time.Now().Add(-tt.since)
			l.beatAt.Store(&at)
		}
		if got := l.holder(); got != tt.want {
			t.Errorf("%s: holder %q, want %q", tt.name, got, tt.want)
		}
	}
	if got := (*lease)(nil).holder(); got != "" {
		t.Errorf("no registration: holder %q, want none", got)
	}
}
