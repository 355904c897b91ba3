package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/navree/navree/queue"
)

// queueRow is a row of the queues page.
type queueRow struct {
	queue.Stats
	Trend rate
}

type queuesData struct {
	Rows      []queueRow
	Total     queue.Stats
	AllPaused bool // queue:pause all: every queue, those to come too
	Back      string
}

func (d *Dashboard) queuesData(ctx context.Context) (queuesData, error) {
	stats, err := d.q.Stats(ctx)
	if err != nil {
		return queuesData{}, err
	}
	all, err := d.q.EveryQueuePaused(ctx)
	if err != nil {
		return queuesData{}, err
	}
	done, err := d.q.Throughput(ctx, throughputWindow)
	if err != nil {
		return queuesData{}, err
	}
	perQueue := rates(done)
	out := queuesData{AllPaused: all, Back: d.cfg.Prefix + "/"}
	for _, s := range stats {
		out.Rows = append(out.Rows, queueRow{Stats: s, Trend: perQueue[s.Queue]})
		out.Total.Waiting += s.Waiting
		out.Total.Delayed += s.Delayed
		out.Total.Running += s.Running
		out.Total.Stale += s.Stale
		out.Total.Failed += s.Failed
		out.Total.OldestWaiting = max(out.Total.OldestWaiting, s.OldestWaiting)
	}
	return out, nil
}

func (d *Dashboard) queuesPage(w http.ResponseWriter, r *http.Request) {
	data, err := d.queuesData(r.Context())
	if err != nil {
		d.queueFailed(w, r, err)
		return
	}
	d.render(w, r, http.StatusOK, "queues.html", d.view(r, "Queues", "queues", data))
}

// queuesPartial is the body of the queues table, which the queues page
// polls.
func (d *Dashboard) queuesPartial(w http.ResponseWriter, r *http.Request) {
	data, err := d.queuesData(r.Context())
	if err != nil {
		d.queueFailed(w, r, err)
		return
	}
	d.render(w, r, http.StatusOK, "queue-rows", d.view(r, "", "queues", data))
}

// filter is what a list of jobs shows: a state, and optionally a queue
// and a job type.
type filter struct {
	State queue.JobState
	Queue string
	Type  string
}

// filterOf reads the filter of a list's URL; the failed page's state is
// failed.
func filterOf(r *http.Request) filter {
	q := r.URL.Query()
	f := filter{State: queue.JobState(q.Get("state")), Queue: q.Get("queue"), Type: q.Get("type")}
	if strings.HasSuffix(r.URL.Path, "/failed") {
		f.State = queue.StateFailed
	}
	if f.State == "" {
		f.State = queue.StateWaiting
	}
	return f
}

// values are the filter as URL parameters, with extra pairs.
func (f filter) values(extra ...string) url.Values {
	v := url.Values{"state": {string(f.State)}}
	if f.Queue != "" {
		v.Set("queue", f.Queue)
	}
	if f.Type != "" {
		v.Set("type", f.Type)
	}
	for i := 0; i+1 < len(extra); i += 2 {
		if extra[i+1] != "" {
			v.Set(extra[i], extra[i+1])
		}
	}
	return v
}

type stateTab struct {
	State queue.JobState
	Count int
}

type jobsData struct {
	Filter filter
	Tabs   []stateTab
	Queues []string
	Jobs   []queue.JobInfo
	After  string // the cursor of this page
	Next   string // the cursor of the next page
	Back   string // this page's URL, for the forms
}

func (d *Dashboard) jobsPage(w http.ResponseWriter, r *http.Request) {
	f := filterOf(r)
	after := r.URL.Query().Get("after")
	jobs, next, err := d.q.Jobs(r.Context(), queue.JobsQuery{State: f.State, Queue: f.Queue, Name: f.Type, After: after, Limit: pageSize})
	if err != nil {
		d.queueFailed(w, r, err)
		return
	}
	stats, err := d.q.Stats(r.Context())
	if err != nil {
		d.queueFailed(w, r, err)
		return
	}
	data := jobsData{Filter: f, Jobs: jobs, After: after, Next: next, Back: r.URL.RequestURI()}
	var total queue.Stats
	for _, s := range stats {
		data.Queues = append(data.Queues, s.Queue)
		if f.Queue == "" || f.Queue == s.Queue {
			total.Waiting, total.Delayed, total.Running, total.Failed = total.Waiting+s.Waiting, total.Delayed+s.Delayed, total.Running+s.Running, total.Failed+s.Failed
		}
	}
	if f.Queue != "" && !slices.Contains(data.Queues, f.Queue) {
		data.Queues = append(data.Queues, f.Queue)
	}
	data.Tabs = []stateTab{{queue.StateWaiting, total.Waiting}, {queue.StateDelayed, total.Delayed},
		{queue.StateRunning, total.Running}, {queue.StateFailed, total.Failed}}
	if d.q.KeepSucceeded() > 0 || f.State == queue.StateSucceeded {
		data.Tabs = append(data.Tabs, stateTab{queue.StateSucceeded, -1}) // not counted: the history may hold millions
	}
	title, nav := "Jobs", "jobs"
	if f.State == queue.StateFailed {
		title, nav = "Failed jobs", "failed"
	}
	d.render(w, r, http.StatusOK, "jobs.html", d.view(r, title, nav, data))
}

type jobData struct {
	Job      queue.JobDetail
	List     filter   // the list the back link goes to
	After    string   // and its page's cursor
	Payload  *payload // shown when asked for
	MaskKeys []string
}

// jobPage shows a job, looked up by its id in whichever state it is
// now. The list that linked to it puts its filter and cursor in the
// query, for the back link alone; without them it goes back to the list
// of the job's state.
func (d *Dashboard) jobPage(w http.ResponseWriter, r *http.Request) {
	job, ok := d.job(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	data := jobData{Job: job, List: filter{State: job.State}, MaskKeys: d.cfg.MaskKeys}
	if state := queue.JobState(q.Get("state")); slices.Contains(jobStates, state) {
		data.List, data.After = filter{State: state, Queue: q.Get("queue"), Type: q.Get("type")}, q.Get("after")
	}
	if q.Get("payload") == "show" {
		p := d.payloadOf(job)
		data.Payload = &p
	}
	nav := "jobs"
	if job.State == queue.StateFailed {
		nav = "failed"
	}
	d.render(w, r, http.StatusOK, "job.html", d.view(r, "Job "+shortID(job.ID), nav, data))
}

// jobStates are the states of the lists, in their tabs' order.
var jobStates = []queue.JobState{queue.StateWaiting, queue.StateDelayed, queue.StateRunning, queue.StateFailed, queue.StateSucceeded}

// job looks up the job of r's path ([queue.Inspector.Job]); a job stored
// nowhere is answered 404, an error of the queue 500.
func (d *Dashboard) job(w http.ResponseWriter, r *http.Request) (queue.JobDetail, bool) {
	id := r.PathValue("id")
	job, err := d.q.Job(r.Context(), id)
	if errors.Is(err, queue.ErrNoJob) {
		d.fail(w, r, http.StatusNotFound, fmt.Sprintf("There is no job %s: it succeeded and is not kept (queue.keep_succeeded), was deleted, "+
			"or never was.", id))
		return queue.JobDetail{}, false
	}
	if err != nil {
		d.queueFailed(w, r, err)
		return queue.JobDetail{}, false
	}
	return job, true
}

// payload is a job's payload and meta as shown: masked and indented.
type payload struct {
	Payload string
	Meta    string
	Invalid bool // not JSON the dashboard can mask: not shown
}

// payloadOf is j's payload and meta, masked.
func (d *Dashboard) payloadOf(j queue.JobDetail) payload {
	var p payload
	var err error
	if p.Payload, err = maskJSON(j.Payload, d.mask); err != nil {
		return payload{Invalid: true}
	}
	if len(j.Meta) > 0 {
		if p.Meta, err = maskJSON(j.Meta, d.mask); err != nil {
			return payload{Invalid: true}
		}
	}
	return p
}

// payloadPartial is the payload of a job, which the job's page fetches
// when asked.
func (d *Dashboard) payloadPartial(w http.ResponseWriter, r *http.Request) {
	job, ok := d.job(w, r)
	if !ok {
		return
	}
	d.render(w, r, http.StatusOK, "payload", d.view(r, "", "jobs", d.payloadOf(job)))
}

// workerRow is a row of the workers page.
type workerRow struct {
	queue.Worker
	Beat string // how long since its last heartbeat, in words
}

func (d *Dashboard) workersPage(w http.ResponseWriter, r *http.Request) {
	workers, err := d.q.Workers(r.Context())
	if err != nil {
		d.queueFailed(w, r, err)
		return
	}
	rows := make([]workerRow, len(workers))
	for i, wk := range workers {
		rows[i] = workerRow{Worker: wk, Beat: wk.SinceHeartbeat.Round(time.Second).String() + " ago"}
	}
	d.render(w, r, http.StatusOK, "workers.html", d.view(r, "Workers", "workers", struct{ Rows []workerRow }{rows}))
}
