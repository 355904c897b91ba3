// Package rate is rate limits, as the storage keeps them: a job with a
// rate limit (driver.Job.RateKey and Rate) starts only while
// its key's window has room; each key's window is a row of queue_rates.
//
// It holds the feature's test of a stored job (Has), its tests in SQL
// (Waiting, Running) and its part of a reservation's plan (Plan), which
// its row of control.All plugs in; the windows (Window, a sliding window
// log, tested against a brute-force log of every start); their
// statements and a transaction's reads and writes of them (Logs, Lock,
// Meter); the rounds of a reservation that does it, which take room and
// give back in the reservation's transaction (Reserve, around the
// driver's search); their memory part (Memory); and its conformance
// tests on the three drivers.
package rate

import (
	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/plan"
	"github.com/navree/navree/queue/internal/driver/sqlkit"
)

// Has reports whether j has a rate limit: the transaction that stores it
// records driver.FeatureRate of its queue.
func Has(j *driver.Job) bool { return j.RateKey != "" }

// Its tests in SQL of a job with a rate limit: Waiting finds a waiting
// one by its partial index, Running a reserved one (by the index of
// reserved jobs). The prober forgets the feature of a queue where
// neither finds one.
const (
	Waiting = "rate_key IS NOT NULL AND reserved_at IS NULL"
	Running = "rate_key IS NOT NULL"
)

// notFull leaves out the jobs of the keys whose window is full at @at (a
// row of queue_rates reopening later).
const notFull = "(rate_key IS NULL OR rate_key NOT IN (SELECT key FROM queue_rates WHERE reopen_at > @at))"

// Plan is the rate limits' part of a reservation's plan: every search
// leaves out the jobs of the keys whose window is full.
func Plan(_ sqlkit.Dialect, p *plan.Reservation) {
	for i := range p.Searches {
		p.Searches[i].Where = append(p.Searches[i].Where, notFull)
	}
}
