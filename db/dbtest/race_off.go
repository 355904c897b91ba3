//go:build !race

package dbtest

// raceEnabled reports whether the test binary runs under the race
// detector, whose tests are bound by the CPU, not by waits.
const raceEnabled = false
