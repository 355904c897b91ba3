package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/navree/navree/queue"
)

// bulkAction is a bulk action and the jobs it applies to.
type bulkAction struct {
	Action string // retry, delete, cancel
	Filter filter
	Count  string // how many jobs match, as shown
	Back   string
	act    action
}

// bulkOf reads a bulk action from r's form.
func (d *Dashboard) bulkOf(r *http.Request) (bulkAction, error) {
	b := bulkAction{Action: r.FormValue("action"), Filter: filter{State: queue.JobState(r.FormValue("state")), Queue: r.FormValue("queue"), Type: r.FormValue("type")},
		Back: d.backURL(r.FormValue("back")).String()}
	a, ok := d.actions()[b.Action]
	if !ok {
		return b, fmt.Errorf("unknown bulk action %q: want retry, delete or cancel", b.Action)
	}
	b.act = a
	if b.Filter.State == "" {
		b.Filter.State = a.states[0]
	}
	if !slices.Contains(a.states, b.Filter.State) {
		return b, fmt.Errorf("%s applies to %s jobs, not %s ones", a.name, strings.Trim(fmt.Sprint(a.states), "[]"), b.Filter.State)
	}
	if b.Filter.Queue != "" && queue.CheckQueueName(b.Filter.Queue) != nil {
		return b, fmt.Errorf("%q is not a queue name", b.Filter.Queue)
	}
	return b, nil
}

// bulkConfirm shows what a bulk action would do, and the button that
// does it.
func (d *Dashboard) bulkConfirm(w http.ResponseWriter, r *http.Request) {
	b, err := d.bulkOf(r)
	if err != nil {
		d.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	if b.Count, err = d.countMatching(r.Context(), b.Filter); err != nil {
		d.queueFailed(w, r, err)
		return
	}
	nav := "jobs"
	if b.Filter.State == queue.StateFailed {
		nav = "failed"
	}
	d.render(w, r, http.StatusOK, "confirm.html", d.view(r, "Confirm", nav, b))
}

// countMatching counts the jobs of f: from Stats without a type, by
// listing them (up to 1,000) with one.
func (d *Dashboard) countMatching(ctx context.Context, f filter) (string, error) {
	if f.Type == "" {
		stats, err := d.q.Stats(ctx)
		if err != nil {
			return "", err
		}
		n := 0
		for _, s := range stats {
			if f.Queue == "" || s.Queue == f.Queue {
				n += stateCount(s, f.State)
			}
		}
		return count(n), nil
	}
	n, after := 0, ""
	for n < 1000 {
		jobs, next, err := d.q.Jobs(ctx, queue.JobsQuery{State: f.State, Queue: f.Queue, Name: f.Type, After: after, Limit: queue.MaxJobsPage})
		if err != nil {
			return "", err
		}
		n += len(jobs)
		if next == "" {
			return strconv.Itoa(n), nil
		}
		after = next
	}
	return strconv.Itoa(n) + "+", nil
}

func stateCount(s queue.Stats, state queue.JobState) int {
	switch state {
	case queue.StateWaiting:
		return s.Waiting
	case queue.StateDelayed:
		return s.Delayed
	case queue.StateRunning:
		return s.Running
	}
	return s.Failed
}

// bulk does a confirmed bulk action.
func (d *Dashboard) bulk(w http.ResponseWriter, r *http.Request) {
	b, err := d.bulkOf(r)
	if err != nil {
		d.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	if r.PostFormValue("confirm") != "yes" {
		d.fail(w, r, http.StatusBadRequest, "A bulk action needs its confirmation: use the button of its confirmation page.")
		return
	}
	ctx := r.Context()
	var n int
	if b.Filter.Queue == "" && b.Filter.Type == "" && b.act.all != nil {
		n, err = b.act.all(ctx)
	} else {
		n, err = d.each(ctx, b.Filter, b.act)
	}
	if errors.Is(err, queue.ErrInvalidQuery) { // a type no job can have
		d.fail(w, r, http.StatusBadRequest, strings.TrimPrefix(err.Error(), "queue: "))
		return
	}
	if err != nil {
		d.logger.ErrorContext(ctx, "queue dashboard: "+b.act.name+" jobs", "done", n, "error", err, "remote_addr", r.RemoteAddr)
		d.fail(w, r, http.StatusInternalServerError, fmt.Sprintf("The queue stopped after %d job(s); the app's log has the error. "+
			"Asking again goes on with the rest.", n))
		return
	}
	d.logger.InfoContext(ctx, "queue dashboard: "+b.act.done+" jobs", "count", n, "state", b.Filter.State, "queue", b.Filter.Queue,
		"type", b.Filter.Type, "remote_addr", r.RemoteAddr)
	d.done(w, r, b.act.done, n)
}

// each does a to each job of f that matched it when it started, a page
// at a time, and returns how many it acted on. A job gone meanwhile
// (another person acted on it) is skipped. Jobs that came after the
// start are left alone: a failure or a due time after it ends the walk
// (the lists are in that order), a delayed job dispatched since is
// skipped.
func (d *Dashboard) each(ctx context.Context, f filter, a action) (int, error) {
	upTo := d.clock.Now()
	n, after := 0, ""
	for {
		jobs, next, err := d.q.Jobs(ctx, queue.JobsQuery{State: f.State, Queue: f.Queue, Name: f.Type, After: after, Limit: queue.MaxJobsPage})
		if err != nil {
			return n, err
		}
		for _, j := range jobs {
			switch {
			case f.State == queue.StateFailed && j.FailedAt.After(upTo), f.State == queue.StateWaiting && j.AvailableAt.After(upTo):
				return n, nil
			case f.State == queue.StateDelayed && j.CreatedAt.After(upTo):
				continue
			}
			if err := a.act(ctx, j.ID); errors.Is(err, a.missing) {
				continue
			} else if err != nil {
				return n, err
			}
			n++
		}
		if next == "" {
			return n, nil
		}
		after = next
	}
}
