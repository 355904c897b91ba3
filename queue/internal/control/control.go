// Package control is the seam where the flow-control features plug into
// the storage core. Each feature is a folder under it, holding its SQL,
// its memory part and its tests (priority/ whole; fair/ and rate/ their
// parts of a reservation so far), and a row of All, which is the one
// place that lists them: the dispatch's record of a queue's features,
// the prober's tidy of them and the reservation's plan all read it.
//
// What a feature writes of a job at dispatch is its stamp, a line of
// queue/stamps.go; what two features cannot share is a row of
// queue/exclusions.go.
package control

import (
	"github.com/navree/navree/queue/internal/control/fair"
	"github.com/navree/navree/queue/internal/control/priority"
	"github.com/navree/navree/queue/internal/control/rate"
	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/plan"
	"github.com/navree/navree/queue/internal/driver/sqlkit"
)

// A Control is one feature that changes a queue's search (see
// driver.Features), as the storage core sees it.
type Control struct {
	// Name is the feature's, as docs and tests call it.
	Name string
	// Feature is its bit, recorded of a queue (queue_features) by the
	// transaction that stores a job that has it.
	Feature driver.Features
	// Has reports whether a job has it.
	Has func(*driver.Job) bool
	// Waiting and Running are its tests in SQL of a job that has it,
	// waiting (by the feature's index) or reserved (by the index of
	// reserved jobs); the prober forgets Feature of a queue where
	// neither finds a job.
	Waiting, Running string
	// Plan is what it adds to the plan of a reservation whose search
	// does it.
	Plan func(sqlkit.Dialect, *plan.Reservation)
}

// All are the features, in the order they add to a reservation's plan: a
// part sees the searches of those before it (priority splits the
// searches by due time that fairness made, and a rate limit filters
// every search).
var All = []Control{
	{"fairness", driver.FeatureFair, fair.Has, fair.Waiting, fair.Running, fair.Plan},
	{"priority", driver.FeaturePriority, priority.Has, priority.Waiting, priority.Running, priority.Plan},
	{"rate limits", driver.FeatureRate, rate.Has, rate.Waiting, rate.Running, rate.Plan},
}

// Parts are All's parts of a reservation's plan, in order.
func Parts() []plan.Part {
	parts := make([]plan.Part, len(All))
	for i, c := range All {
		parts[i] = plan.Part{Name: c.Name, Feature: c.Feature, Add: c.Plan}
	}
	return parts
}

// Of returns the features j has.
func Of(j *driver.Job) driver.Features {
	var f driver.Features
	for _, c := range All {
		if c.Has(j) {
			f |= c.Feature
		}
	}
	return f
}
