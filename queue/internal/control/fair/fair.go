// Package fair is fairness, as the storage keeps it: the jobs of
// priority 0 with a fairness key (driver.Job.FairKey) are taken in turns
// by key, by their places (driver.Job.FairSeq, given at dispatch), beside
// those without a key by due time.
//
// It holds the feature's test of a stored job (Has), its tests in SQL
// (Waiting, Running) and its part of a reservation's plan (Plan), which
// its row of control.All plugs in; the order of a fair reservation's jobs
// (Order, Drained); the giving of places in SQL (Place) and the prune of
// groups behind their round (AnyBehind, Prune); its memory part (Memory);
// and its conformance tests on the three drivers. On PostgreSQL the rule
// of a place is also the function navree_fair (a migration's), which the
// trigger jobs_fair runs for a job that enters jobs without one (a move
// from another table); the memory driver's fair search
// (memdriver/fair.go) walks the driver's own lists.
package fair

import (
	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/plan"
	"github.com/navree/navree/queue/internal/driver/sqlkit"
)

// Has reports whether j has a fairness key: the transaction that stores
// it records driver.FeatureFair of its queue.
func Has(j *driver.Job) bool { return j.FairKey != "" }

// Its tests in SQL of a job with a key: Waiting finds a waiting one by
// jobs_fair, Running a reserved one (by the index of reserved jobs). The
// prober forgets the feature of a queue where neither finds one.
const (
	Waiting = "reserved_at IS NULL AND fair_seq IS NOT NULL"
	Running = "fair_key IS NOT NULL"
)

// The orders of a fair reservation: byPlace of its search of the jobs
// with a key; order, Order in SQL, of its jobs together.
const (
	byPlace = "fair_seq, available_at, id"
	order   = "priority DESC, CASE WHEN priority = 0 THEN coalesce(fair_seq, 0) ELSE 0 END, available_at, id"
)

// Plan is fairness's part of a reservation's plan: beside the search of
// the jobs without a key by due time (jobs_waiting, which holds only
// those), a search takes those with one by place (jobs_fair), from the
// first place a worker has not passed, @place; in turns by group
// together. On SQLite each search names its index (INDEXED BY).
func Plan(_ sqlkit.Dialect, p *plan.Reservation) {
	for i := range p.Searches {
		p.Searches[i].Index = "jobs_waiting"
	}
	p.Searches = append(p.Searches, plan.Search{Name: "f", Index: "jobs_fair", Where: []string{"fair_seq IS NOT NULL", "fair_seq >= @place", plan.Due}, Order: byPlace})
	p.Order, p.Columns = order, "id, priority, fair_seq, available_at"
}
