package queue

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestTimeline: the steps a job's failures and state tell, with the
// attempts that ended without an outcome and an operator's retry.
func TestTimeline(t *testing.T) {
	at := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	f := func(n int, err string) AttemptFailure {
		return AttemptFailure{Attempt: n, At: at, RunTime: time.Second, Worker: "w1", Error: err}
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
	}
	for _, tt := range tests {
		if got := steps(tt.d); got != tt.want {
			t.Errorf("%s: %q\nwant %q", tt.name, got, tt.want)
		}
	}
}
