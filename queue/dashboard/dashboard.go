package dashboard

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/navree/navree/app"
	"github.com/navree/navree/db"
	"github.com/navree/navree/queue"
)

//go:embed templates static
var files embed.FS

// pageSize is how many jobs a list page holds.
const pageSize = 50

// Dashboard is the queue dashboard: an http.Handler serving its pages
// under its prefix. Build it with [Module] (or [New]).
type Dashboard struct {
	cfg         Config
	q           *queue.Inspector
	access      AccessFunc
	development bool
	clock       app.Clock
	logger      *slog.Logger
	mask        map[string]bool
	pages       map[string]*template.Template
	assets      map[string]string // file name -> its URL, with a version
	handler     http.Handler
}

// New returns the dashboard p describes. It does no I/O: the queue is
// read when a page is asked for.
func New(p Params) (*Dashboard, error) {
	cfg, err := p.Config.withDefaults()
	if err != nil {
		return nil, err
	}
	if p.Inspector == nil {
		return nil, errors.New("dashboard: Params.Inspector is nil")
	}
	d := &Dashboard{cfg: cfg, q: p.Inspector, access: p.AccessFunc, development: p.Development, clock: p.Clock, logger: p.Logger,
		mask: map[string]bool{}, assets: map[string]string{}}
	if d.clock == nil {
		d.clock = app.SystemClock{}
	}
	if d.logger == nil {
		d.logger = slog.New(slog.DiscardHandler)
	}
	for _, k := range cfg.MaskKeys {
		d.mask[strings.ToLower(k)] = true
	}
	for _, name := range []string{"dashboard.css", "htmx.min.js"} {
		b, err := files.ReadFile("static/" + name)
		if err != nil {
			return nil, fmt.Errorf("dashboard: %w", err)
		}
		sum := sha256.Sum256(b)
		d.assets[name] = cfg.Prefix + "/static/" + name + "?v=" + hex.EncodeToString(sum[:6])
	}
	if d.pages, err = parsePages(); err != nil {
		return nil, err
	}
	d.handler = d.routes()
	return d, nil
}

// Route is the dashboard as a route of serve: every path under the
// prefix.
func (d *Dashboard) Route() app.Route { return app.Route{Pattern: d.cfg.Prefix + "/", Handler: d} }

// ServeHTTP serves the dashboard's pages under its prefix; a request
// outside it is not found.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) { d.handler.ServeHTTP(w, r) }

// routes is the dashboard's handler: its pages, behind the access check
// and the cross-origin protection of its forms.
func (d *Dashboard) routes() http.Handler {
	p := d.cfg.Prefix
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+p+"/{$}", d.queuesPage)
	mux.HandleFunc("GET "+p+"/partials/queues", d.queuesPartial)
	mux.HandleFunc("GET "+p+"/jobs", d.jobsPage)
	mux.HandleFunc("GET "+p+"/failed", d.jobsPage)
	mux.HandleFunc("GET "+p+"/jobs/{id}", d.jobPage)
	mux.HandleFunc("GET "+p+"/jobs/{id}/payload", d.payloadPartial)
	mux.HandleFunc("POST "+p+"/failed/{id}/retry", d.operator(d.jobAction("retry")))
	mux.HandleFunc("POST "+p+"/failed/{id}/delete", d.operator(d.jobAction("delete")))
	mux.HandleFunc("POST "+p+"/jobs/{id}/cancel", d.operator(d.jobAction("cancel")))
	mux.HandleFunc("POST "+p+"/queues/{name}/pause", d.operator(d.pause))
	mux.HandleFunc("POST "+p+"/queues/{name}/resume", d.operator(d.pause))
	mux.HandleFunc("GET "+p+"/bulk", d.operator(d.bulkConfirm))
	mux.HandleFunc("POST "+p+"/bulk", d.operator(d.bulk))
	static, _ := fs.Sub(files, "static")
	mux.Handle("GET "+p+"/static/", http.StripPrefix(p+"/static/", staticFiles(static)))
	mux.HandleFunc(p+"/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost { // an action's URL opened: say it is a form's
			post := r.Clone(r.Context())
			post.Method = http.MethodPost
			if _, pattern := mux.Handler(post); strings.HasPrefix(pattern, "POST ") {
				w.Header().Set("Allow", http.MethodPost)
				d.fail(w, r, http.StatusMethodNotAllowed, "This is the address of an action: its page's button sends it.")
				return
			}
		}
		d.fail(w, r, http.StatusNotFound, "There is no such page of the queue dashboard.")
	})
	// Actions are POSTs; a browser's POST from another origin is refused.
	csrf := http.NewCrossOriginProtection()
	csrf.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.fail(w, r, http.StatusForbidden, "This form was sent from another site, so it was refused.")
	}))
	return d.headers(csrf.Handler(d.guard(mux)))
}

// headers sets what every answer of the dashboard has: no caching of
// pages, no framing, scripts and styles from the dashboard alone.
func (d *Dashboard) headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "+
			"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// guard refuses a request without a role, and gives the others theirs.
func (d *Dashboard) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		role := d.role(r)
		if role < Viewer {
			msg := "You have no access to the queue dashboard."
			if d.access == nil {
				msg += " It is closed until the app gives it an access function (dashboard.Access); " +
					"in development it opens to requests from this machine."
			}
			d.fail(w, r, http.StatusForbidden, msg)
			return
		}
		// The queue's calls run in transactions of their own, not in the
		// request's unit of work (db.Middleware wraps serve's routes in
		// one): RetryAll commits each batch as it goes, and a read takes
		// no write lock. The request's other values (a trace) stay.
		ctx := context.WithValue(db.WithoutUnitOfWork(r.Context()), roleKey{}, role)
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// operator refuses an action to a viewer.
func (d *Dashboard) operator(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if roleOf(r.Context()) < Operator {
			d.fail(w, r, http.StatusForbidden, "Your role is viewer: only an operator may change jobs and queues.")
			return
		}
		next(w, r)
	}
}

// staticFiles serves the embedded assets; their URLs carry a version, so
// they may be kept a while.
func staticFiles(fsys fs.FS) http.Handler {
	fileServer := http.FileServerFS(fsys)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "" || strings.HasSuffix(r.URL.Path, "/") { // no listings
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "private, max-age=86400")
		fileServer.ServeHTTP(w, r)
	})
}

// view is what every page template gets.
type view struct {
	Prefix   string
	Title    string
	Nav      string // the page of the navigation that is current
	Role     Role
	Operator bool
	Refresh  string // htmx's trigger for polling: "every 5s"
	Assets   map[string]string
	Flash    string
	Data     any
}

func (d *Dashboard) view(r *http.Request, title, nav string, data any) view {
	role := roleOf(r.Context())
	return view{Prefix: d.cfg.Prefix, Title: title, Nav: nav, Role: role, Operator: role >= Operator,
		Refresh: fmt.Sprintf("every %dms", d.cfg.RefreshMs), Assets: d.assets, Flash: flash(r.URL.Query()), Data: data}
}

// render writes the page name with v, or an error page.
func (d *Dashboard) render(w http.ResponseWriter, r *http.Request, status int, name string, v any) {
	var b strings.Builder
	if err := d.pages[name].ExecuteTemplate(&b, name, v); err != nil {
		d.logger.ErrorContext(r.Context(), "queue dashboard: render", "page", name, "error", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// fail answers status with a page saying msg.
func (d *Dashboard) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	v := d.view(r, http.StatusText(status), "", struct {
		Status  int
		Message string
	}{status, msg})
	v.Operator = false
	d.render(w, r, status, "error.html", v)
}

// queueFailed answers an error of the queue: 400 for a query it
// refuses, 500 otherwise, its error logged and not shown.
func (d *Dashboard) queueFailed(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, queue.ErrInvalidQuery) {
		d.fail(w, r, http.StatusBadRequest, strings.TrimPrefix(err.Error(), "queue: "))
		return
	}
	if r.Context().Err() == nil {
		d.logger.ErrorContext(r.Context(), "queue dashboard: read the queue", "path", r.URL.Path, "error", err)
	}
	d.fail(w, r, http.StatusInternalServerError, "The queue could not be read; the app's log has the error.")
}

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
var jobStates = []queue.JobState{queue.StateWaiting, queue.StateDelayed, queue.StateRunning, queue.StateFailed}

// job looks up the job of r's path ([queue.Inspector.Job]); a job stored
// nowhere is answered 404, an error of the queue 500.
func (d *Dashboard) job(w http.ResponseWriter, r *http.Request) (queue.JobDetail, bool) {
	id := r.PathValue("id")
	job, err := d.q.Job(r.Context(), id)
	if errors.Is(err, queue.ErrNoJob) {
		d.fail(w, r, http.StatusNotFound, fmt.Sprintf("There is no job %s: it has succeeded or been deleted (the queue keeps no finished job), "+
			"or it never was.", id))
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
	}
	return ""
}

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
