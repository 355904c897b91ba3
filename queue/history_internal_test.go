package queue

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/navree/navree/queue/internal/driver"
)

// TestTimeline: the steps a job's failures, interruptions and state
// tell, with the attempts that ended without an outcome and an
// operator's retry.
func TestTimeline(t *testing.T) {
	at := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	f := func(n int, err string) AttemptFailure {
		return AttemptFailure{Attempt: n, At: at, RunTime: time.Second, Worker: "w1", Error: err}
	}
	in := func(n int, after time.Duration) Interruption {
		return Interruption{Attempt: n, At: at.Add(after), RunTime: time.Second, Worker: "w1"}
	}
	steps := func(d JobDetail) string {
		var b []string
		for _, s := range d.Timeline() {
			b = append(b, fmt.Sprintf("%d %s %s", s.Attempt, s.Outcome, s.Error))
		}
		return strings.Join(b, "; ")
	}
	tests := []struct {
		name string
		d    JobDetail
		want string
	}{
		{"waiting, never run", JobDetail{State: StateWaiting}, ""},
		{"waiting after a released attempt", JobDetail{State: StateDelayed, JobInfo: JobInfo{Attempts: 1}, Failures: []AttemptFailure{f(1, "451")}},
			"1 released 451"},
		{"running after a lost attempt", JobDetail{State: StateRunning, JobInfo: JobInfo{Attempts: 3, Worker: "w2"}, Failures: []AttemptFailure{f(1, "451")}},
			"1 released 451; 2 lost ; 3 running "},
		{"failed", JobDetail{State: StateFailed, JobInfo: JobInfo{Attempts: 2}, Failures: []AttemptFailure{f(1, "451"), f(2, "550")}},
			"1 released 451; 2 failed 550"},
		{"failed after its last attempt was lost", JobDetail{State: StateFailed, JobInfo: JobInfo{Attempts: 2},
			Failures: []AttemptFailure{f(1, "451"), f(2, "attempt 2 of 2 ended without an outcome")}},
			"1 released 451; 2 failed attempt 2 of 2 ended without an outcome"},
		{"succeeded at its first attempt", JobDetail{State: StateSucceeded, Succeeded: true, JobInfo: JobInfo{Attempts: 1}}, "1 succeeded "},
		{"succeeded after a retry of the failed job", JobDetail{State: StateSucceeded, Succeeded: true, JobInfo: JobInfo{Attempts: 1},
			Failures: []AttemptFailure{f(1, "451"), f(2, "550")}}, "1 released 451; 2 failed 550; 0 retried ; 1 succeeded "},
		{"waiting after a retry", JobDetail{State: StateWaiting, Failures: []AttemptFailure{f(1, "451"), f(2, "550")}},
			"1 released 451; 2 failed 550; 0 retried "},
		// An interrupted attempt gives its number back: the next has it too.
		{"waiting after an interrupted attempt", JobDetail{State: StateWaiting, Interruptions: []Interruption{in(1, 0)}},
			"1 interrupted "},
		{"running again after an interrupted attempt", JobDetail{State: StateRunning, JobInfo: JobInfo{Attempts: 1}, Interruptions: []Interruption{in(1, 0)}},
			"1 interrupted ; 1 running "},
		{"interrupted at the same time as the failure of its rerun", JobDetail{State: StateSucceeded, JobInfo: JobInfo{Attempts: 2},
			Failures: []AttemptFailure{f(1, "451")}, Interruptions: []Interruption{in(1, 0), in(2, time.Minute)}},
			"1 interrupted ; 1 released 451; 2 interrupted ; 2 succeeded "},
		{"released, then interrupted at the same time", JobDetail{State: StateWaiting, JobInfo: JobInfo{Attempts: 1},
			Failures: []AttemptFailure{f(1, "451")}, Interruptions: []Interruption{in(2, 0)}},
			"1 released 451; 2 interrupted "},
		{"interrupted, its rerun lost", JobDetail{State: StateRunning, JobInfo: JobInfo{Attempts: 2}, Interruptions: []Interruption{in(1, 0)}},
			"1 interrupted ; 1 lost ; 2 running "},
		{"failed, retried by an operator, interrupted", JobDetail{State: StateWaiting,
			Failures: []AttemptFailure{f(1, "451"), f(2, "550")}, Interruptions: []Interruption{in(1, time.Hour)}},
			"1 released 451; 2 failed 550; 0 retried ; 1 interrupted "},
	}
	for _, tt := range tests {
		if got := steps(tt.d); got != tt.want {
			t.Errorf("%s: %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

// TestPercentilesFromBucketsMatchTheExactOnes: against a brute-force
// reference (the nearest-rank percentile of the sorted durations), the
// estimate from half-octave counts is in the exact one's bucket, within a
// quarter octave (19%) of it.
func TestPercentilesFromBucketsMatchTheExactOnes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		n := 1 + r.IntN(2000)
		durations := make([]time.Duration, n)
		var h histogram
		for i := range durations {
			// Log-uniform from 10 µs to 10 min, as real run times spread.
			us := int64(math.Exp(math.Log(10) + r.Float64()*(math.Log(600e6)-math.Log(10))))
			durations[i] = time.Duration(us) * time.Microsecond
			h[driver.Bucket(us)]++
		}
		slices.Sort(durations)
		for _, p := range []float64{0.5, 0.95, 0.99, 1} {
			exact := durations[int(math.Ceil(p*float64(n)))-1]
			got := h.percentile(p)
			if driver.Bucket(exact.Microseconds()) != driver.Bucket(got.Microseconds()) {
				t.Fatalf("round %d, p%.0f of %d: estimated %s, exact %s: not in one bucket", round, p*100, n, got, exact)
			}
			if exact >= 100*time.Microsecond && math.Abs(math.Log2(float64(got)/float64(exact))) > 0.25+1e-9 {
				t.Fatalf("round %d, p%.0f: estimated %s, exact %s: more than a quarter octave apart", round, p*100, got, exact)
			}
		}
	}
	var empty histogram
	if got := empty.percentile(0.5); got != 0 {
		t.Fatalf("no count: %s", got)
	}
}
