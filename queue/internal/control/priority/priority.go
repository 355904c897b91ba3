// Package priority is the priority of jobs, as the storage keeps it: a
// job's priority (driver.Job.Priority, from -100 to 100, 0 for most
// jobs) orders the due jobs of its queue, higher first, then by due time
// and id. It holds what the feature adds to the storage core: its test
// of a stored job (Has), its tests in SQL (Waiting, Running), its part
// of a reservation's plan (Plan), its part of the memory driver's
// waiting jobs (Levels), and its conformance tests on the three drivers.
// Its row of control.All plugs it in.
//
// Its index, jobs_prioritized (queue, priority DESC, available_at, id)
// WHERE reserved_at IS NULL AND priority <> 0, holds only the jobs with
// a priority: a queue whose jobs have none pays nothing for it.
package priority

import (
	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/plan"
	"github.com/navree/navree/queue/internal/driver/sqlkit"
)

// Has reports whether j has a priority other than 0: the transaction
// that stores it records driver.FeaturePriority of its queue.
func Has(j *driver.Job) bool { return j.Priority != 0 }

// Its tests in SQL of a job with a priority: Waiting finds a waiting one
// by jobs_prioritized, Running a reserved one (by the index of reserved
// jobs). The prober forgets the feature of a queue where neither finds
// one.
const (
	Waiting = "reserved_at IS NULL AND priority <> 0"
	Running = "priority <> 0"
)

// byPriority is the order of the jobs with a priority.
const byPriority = "priority DESC, available_at, id"

// Plan is priority's part of a reservation's plan: the searches so far
// take the jobs of priority 0; before them a search of those with a
// priority along jobs_prioritized, which holds only those. On
// PostgreSQL, which runs the searches in turn, each locking (SKIP
// LOCKED) only what the ones before left of the limit, the priorities
// above 0 come first and those below 0 last, so that a reservation
// locks no job it does not take; on SQLite one search takes them all,
// and the first by priority of all the searches together are reserved.
func Plan(d sqlkit.Dialect, p *plan.Reservation) {
	for i := range p.Searches {
		p.Searches[i].Where = append([]string{"priority = 0"}, p.Searches[i].Where...)
	}
	withPriority := func(name string, where ...string) plan.Search {
		return plan.Search{Name: name, Index: "jobs_prioritized", Where: append(append([]string{"priority <> 0"}, where...), plan.Due), Order: byPriority}
	}
	if d.PG {
		p.Searches = append(append([]plan.Search{withPriority("p", "priority > 0")}, p.Searches...), withPriority("n", "priority < 0"))
	} else {
		p.Searches = append([]plan.Search{withPriority("p")}, p.Searches...)
	}
	if p.Order == "" {
		p.Order, p.Columns = byPriority, "id, priority, available_at"
	}
}
