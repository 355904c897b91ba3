package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/navree/navree/queue"
)

// action is what an operator may do to a job, one or all matching.
type action struct {
	name   string           // retry, delete, cancel
	done   string           // what the flash says was done: retried...
	states []queue.JobState // of the jobs it acts on
	// act does it to one job; the error of a job it cannot act on (not
	// failed, not pending any more) matches missing.
	act     func(ctx context.Context, id string) error
	missing error
	gone    string // the 404's message for such a job, %s its id
	// all does it to every job, when there is no filter; nil: one at a
	// time.
	all func(ctx context.Context) (int, error)
}

func (d *Dashboard) actions() map[string]action {
	return map[string]action{
		"retry": {name: "retry", done: "retried", states: []queue.JobState{queue.StateFailed},
			act:     func(ctx context.Context, id string) error { _, err := d.q.Retry(ctx, id); return err },
			missing: queue.ErrNoFailedJob, gone: "There is no failed job %s: it was retried or deleted already.",
			all: func(ctx context.Context) (int, error) { return d.q.RetryAll(ctx, nil) }},
		"delete": {name: "delete", done: "deleted", states: []queue.JobState{queue.StateFailed},
			act: d.q.DeleteFailed, missing: queue.ErrNoFailedJob, gone: "There is no failed job %s: it was retried or deleted already.",
			all: d.q.FlushFailed},
		"cancel": {name: "cancel", done: "cancelled", states: []queue.JobState{queue.StateWaiting, queue.StateDelayed, queue.StateRunning},
			act: d.q.Cancel, missing: queue.ErrNoJob, gone: "There is no waiting, delayed or running job %s: it finished, failed or was cancelled already."},
	}
}

// jobAction is the handler of an action on one job.
func (d *Dashboard) jobAction(name string) http.HandlerFunc {
	a := d.actions()[name]
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if err := a.act(r.Context(), id); errors.Is(err, a.missing) {
			d.fail(w, r, http.StatusNotFound, fmt.Sprintf(a.gone, id))
			return
		} else if err != nil {
			d.actionFailed(w, r, a.name, err)
			return
		}
		d.logger.InfoContext(r.Context(), "queue dashboard: "+a.done+" a job", "job_id", id, "remote_addr", r.RemoteAddr)
		d.done(w, r, a.done, 1)
	}
}

// flowAction is the handler of an action on a chain, batch or workflow:
// cancel ([queue.Inspector.CancelFlow]) or retry from its failed steps
// ([queue.Inspector.RetryFlow]).
func (d *Dashboard) flowAction(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		var n int
		var extra []string
		var err error
		switch name {
		case "cancel":
			var did queue.FlowCancellation
			did, err = d.q.CancelFlow(r.Context(), id)
			n, extra = did.Ended, []string{"signalled", strconv.Itoa(did.Signalled)}
		case "retry":
			n, err = d.q.RetryFlow(r.Context(), id)
		}
		if errors.Is(err, queue.ErrNoFlow) {
			d.fail(w, r, http.StatusNotFound, noFlowText(err))
			return
		} else if err != nil {
			d.logger.ErrorContext(r.Context(), "queue dashboard: "+name+" a flow", "flow_id", id, "error", err, "remote_addr", r.RemoteAddr)
			d.fail(w, r, http.StatusInternalServerError, "The queue could not "+name+" the flow; the app's log has the error.")
			return
		}
		done := map[string]string{"cancel": "flow_cancelled", "retry": "flow_retried"}[name]
		d.logger.InfoContext(r.Context(), "queue dashboard: "+strings.TrimPrefix(done, "flow_")+" a flow", "flow_id", id, "steps", n, "remote_addr", r.RemoteAddr)
		d.done(w, r, done, n, extra...)
	}
}

// pause pauses or resumes a queue, or every queue for the name "all"
// (queue.AllQueues).
func (d *Dashboard) pause(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if name != queue.AllQueues && queue.CheckQueueName(name) != nil {
		d.fail(w, r, http.StatusBadRequest, fmt.Sprintf("%q is not a queue name.", name))
		return
	}
	act, done, err := d.q.Pause, "paused", error(nil)
	if strings.HasSuffix(r.URL.Path, "/resume") {
		act, done = d.q.Resume, "resumed"
	}
	if err = act(r.Context(), name); errors.Is(err, queue.ErrEveryQueuePaused) {
		d.fail(w, r, http.StatusConflict, "Every queue is paused: resume all of them, then pause the others again.")
		return
	} else if err != nil {
		d.actionFailed(w, r, strings.TrimSuffix(done, "d"), err)
		return
	}
	d.logger.InfoContext(r.Context(), "queue dashboard: "+done+" a queue", "queue", name, "remote_addr", r.RemoteAddr)
	d.done(w, r, done, 1, "queue", name)
}

// actionFailed answers an action the queue could not do: 500, the error
// logged.
func (d *Dashboard) actionFailed(w http.ResponseWriter, r *http.Request, action string, err error) {
	d.logger.ErrorContext(r.Context(), "queue dashboard: "+action, "error", err, "remote_addr", r.RemoteAddr)
	d.fail(w, r, http.StatusInternalServerError, "The queue could not "+action+" the job(s); the app's log has the error.")
}

// done sends the browser back to the page it acted from (the form's
// back field, a page of the dashboard), saying what was done.
func (d *Dashboard) done(w http.ResponseWriter, r *http.Request, what string, n int, extra ...string) {
	back := d.backURL(r.PostFormValue("back"))
	q := back.Query()
	q.Set("done", what)
	q.Set("n", strconv.Itoa(n))
	for i := 0; i+1 < len(extra); i += 2 {
		q.Set("done_"+extra[i], extra[i+1])
	}
	back.RawQuery = q.Encode()
	http.Redirect(w, r, back.String(), http.StatusSeeOther)
}

// backURL is s when it is a page of the dashboard, else the queues page.
// A page of the dashboard is a path under the prefix once its dot
// segments are resolved (as http.Redirect and the browser resolve them,
// encoded or not), so that a back such as /navree/queue/../../evil goes
// to the queues page rather than to /evil.
func (d *Dashboard) backURL(s string) *url.URL {
	u, err := url.Parse(s)
	home := &url.URL{Path: d.cfg.Prefix + "/"}
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" ||
		strings.Contains(s, "\\") || strings.Contains(u.Path, "\\") ||
		!strings.HasPrefix(u.Path, d.cfg.Prefix+"/") || cleanPath(u.Path) != u.Path {
		return home
	}
	q := u.Query()
	for k := range q {
		if k == "done" || k == "n" || k == "payload" || strings.HasPrefix(k, "done_") {
			q.Del(k)
		}
	}
	return &url.URL{Path: u.Path, RawQuery: q.Encode()}
}

// cleanPath is p with its dot segments resolved, its trailing slash
// kept, as http.Redirect cleans a path.
func cleanPath(p string) string {
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}

// flash is the message of a page an action sent the browser back to.
func flash(q url.Values) string {
	n, err := strconv.Atoi(q.Get("n"))
	if err != nil || n < 0 {
		return ""
	}
	jobs := "jobs"
	if n == 1 {
		jobs = "job"
	}
	name := q.Get("done_queue")
	if name != queue.AllQueues && queue.CheckQueueName(name) != nil {
		name = ""
	}
	switch what := q.Get("done"); {
	case what == "retried":
		return fmt.Sprintf("Retried %d %s: back on %s queue.", n, jobs, map[bool]string{true: "its", false: "their"}[n == 1])
	case what == "deleted":
		return fmt.Sprintf("Deleted %d failed %s, for good.", n, jobs)
	case what == "cancelled":
		return fmt.Sprintf("Cancelled %d %s: a waiting or delayed one is now failed, with the error \"cancelled\"; a running one is told to stop.", n, jobs)
	case (what == "paused" || what == "resumed") && name == queue.AllQueues:
		return fmt.Sprintf("%s every queue.", map[string]string{"paused": "Paused", "resumed": "Resumed"}[what])
	case what == "paused" && name != "":
		return "Paused queue " + name + ": its workers take none of its jobs until it is resumed."
	case what == "resumed" && name != "":
		return "Resumed queue " + name + "."
	case what == "flow_cancelled":
		signalled, err := strconv.Atoi(q.Get("done_signalled"))
		if err != nil || signalled < 0 {
			signalled = 0
		}
		return fmt.Sprintf("Cancelled: %d %s will not run, %d running %s asked to stop.", n, plural(n, "step", "steps"),
			signalled, plural(signalled, "was", "were"))
	case what == "flow_retried":
		return fmt.Sprintf("Retrying from the failed steps: %d %s put back.", n, plural(n, "step", "steps"))
	}
	return ""
}

// plural is one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
