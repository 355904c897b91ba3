//go:build race

package queue_test

// raceEnabled: the race detector slows the worker processes of the chaos
// test tenfold; .ci/run runs that test again without it.
const raceEnabled = true
