// Package flow is chains, batches and workflows, as the storage keeps
// them: a flow is a graph of steps, each a job; a step waits, held,
// until the steps it depends on have ended, and the transaction that
// ends a step (its job's completion, failure or cancel) resolves what
// that changes, through a driver's Tx and Resolve: nothing ever walks a
// whole graph to find what is due.
//
// It holds the algorithm every driver runs (Resolve, over the small
// interface Tx that the memory driver implements on its maps and the
// database drivers in SQL), the statements of the flows' own tables
// (sql.go), and the conformance tests of flows on the three drivers. The
// flows' rows and the Driver's methods on them are package driver's
// (Flow, Step, NewFlow, Flows); each driver's Tx is its own
// (dbdriver/flow.go, memdriver/flow.go).
package flow

import (
	"slices"

	"github.com/navree/navree/queue/internal/driver"
)

// FailedState is the state a step ends in when its job is moved to the
// failed jobs with errText: cancelled for a cancel, else failed.
func FailedState(errText string) string {
	if errText == driver.CancelledError {
		return driver.StepCancelled
	}
	return driver.StepFailed
}

// Ended is a step whose state Tx.End changed; Dependants says that
// steps wait for it (Resolve asks Tx.Satisfy of those alone).
type Ended struct {
	ID, Flow, Role, State string
	Dependants            bool
}

// Held is a held step as Tx.Satisfy left it.
type Held struct {
	ID, Flow    string
	Waiting     int
	FailedDeps  int
	RunIfFailed bool
}

// Tx is what a driver offers Resolve inside the transaction that
// ends steps. Each method changes only steps in the state it names, so
// that what two transactions race for happens once.
type Tx interface {
	// End sets the steps ids not yet ended (held or queued) to state,
	// with errText, at at, and returns those it changed.
	End(ids []string, state, errText string, at int64) ([]Ended, error)
	// Satisfy counts, for each edge from one of ids, one dependency
	// ended for the held step it leads to (and one failed when failed),
	// and returns those steps as they are now.
	Satisfy(ids []string, failed bool) ([]Held, error)
	// Tally counts succeeded and failed steps of flow ended, and returns
	// the flow as it is now (its FinishedAt and State set once Pending is
	// 0, unless it was cancelled).
	Tally(flow string, succeeded, failed int, at int64) (driver.Flow, error)
	// Release moves the held steps ids into jobs, due at now plus their
	// delays.
	Release(ids []string, now int64) error
	// HeldOf lists the held steps of flow in role.
	HeldOf(flow, role string) ([]string, error)
	// Unqueue moves the waiting jobs of flow (not running) to the failed
	// jobs with errText, at now, and returns their ids.
	Unqueue(flow, errText string, now int64) ([]string, error)
}

// Resolve works out, in the transaction of tx, what the steps ended
// change: it counts them in their flows, releases the steps whose
// dependencies have all ended (fails those with a failed one, unless they
// run if failed), releases a flow's callbacks when its counts call for
// them, and cancels a batch's waiting steps at its first failure; each
// step it ends in turn is resolved the same way.
func Resolve(tx Tx, ended []Ended, now int64) error {
	for len(ended) > 0 {
		var next []Ended
		var ok, bad []string
		type tally struct{ succeeded, failed int }
		tallies := map[string]*tally{}
		var flows []string
		for _, e := range ended {
			if e.Role != driver.RoleStep {
				continue
			}
			t := tallies[e.Flow]
			if t == nil {
				t = &tally{}
				tallies[e.Flow] = t
				flows = append(flows, e.Flow)
			}
			switch {
			case e.State == driver.StepSucceeded:
				t.succeeded++
				if e.Dependants {
					ok = append(ok, e.ID)
				}
			default:
				t.failed++
				if e.Dependants {
					bad = append(bad, e.ID)
				}
			}
		}
		// The dependants first, then the flows' rows: each transaction
		// takes the rows it locks in that order.
		var release, fail []string
		for _, set := range []struct {
			ids    []string
			failed bool
		}{{ok, false}, {bad, true}} {
			if len(set.ids) == 0 {
				continue
			}
			held, err := tx.Satisfy(set.ids, set.failed)
			if err != nil {
				return err
			}
			for _, h := range held {
				switch {
				case h.FailedDeps > 0 && !h.RunIfFailed:
					fail = append(fail, h.ID)
				case h.Waiting <= 0:
					release = append(release, h.ID)
				}
			}
		}
		release = slices.DeleteFunc(release, func(id string) bool { return slices.Contains(fail, id) })
		if len(release) > 0 {
			if err := tx.Release(release, now); err != nil {
				return err
			}
		}
		if len(fail) > 0 {
			e, err := tx.End(fail, driver.StepFailed, driver.DependencyFailed, now)
			if err != nil {
				return err
			}
			next = append(next, e...)
		}
		slices.Sort(flows)
		for _, id := range flows {
			t := tallies[id]
			f, err := tx.Tally(id, t.succeeded, t.failed, now)
			if err != nil {
				return err
			}
			e, err := callbacks(tx, f, t.failed, now)
			if err != nil {
				return err
			}
			next = append(next, e...)
		}
		ended = next
	}
	return nil
}

// callbacks does what a flow's counts, after failed more failures, call
// for: at its first failure its catch, and a batch's waiting steps
// cancelled; once no step is pending its finally, and its then if none
// failed (else skipped), its catch skipped if none did.
func callbacks(tx Tx, f driver.Flow, failed int, now int64) ([]Ended, error) {
	if f.State == driver.FlowCancelled {
		return nil, nil
	}
	var ended []Ended
	if failed > 0 && f.Failed == failed { // the first failures
		if f.CancelOnFailure && f.Pending > 0 {
			ids, err := tx.Unqueue(f.ID, driver.BatchFailed, now)
			if err != nil {
				return nil, err
			}
			held, err := tx.HeldOf(f.ID, driver.RoleStep)
			if err != nil {
				return nil, err
			}
			if ended, err = tx.End(append(ids, held...), driver.StepCancelled, driver.BatchFailed, now); err != nil {
				return nil, err
			}
		}
		if err := releaseRole(tx, f.ID, driver.RoleCatch, now); err != nil {
			return nil, err
		}
	}
	if f.Pending > 0 {
		return ended, nil
	}
	if err := releaseRole(tx, f.ID, driver.RoleFinally, now); err != nil {
		return nil, err
	}
	run, skip := driver.RoleThen, driver.RoleCatch
	if f.Failed > 0 {
		run, skip = "", driver.RoleThen
	}
	if run != "" {
		if err := releaseRole(tx, f.ID, run, now); err != nil {
			return nil, err
		}
	}
	ids, err := tx.HeldOf(f.ID, skip)
	if err != nil || len(ids) == 0 {
		return ended, err
	}
	_, err = tx.End(ids, driver.StepSkipped, "", now)
	return ended, err
}

func releaseRole(tx Tx, flow, role string, now int64) error {
	ids, err := tx.HeldOf(flow, role)
	if err != nil || len(ids) == 0 {
		return err
	}
	return tx.Release(ids, now)
}
