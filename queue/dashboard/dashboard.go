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
	added       []Page    // the pages other modules added
	nav         []navLink // their links
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
	if d.handler, err = d.routes(p.Pages); err != nil {
		return nil, err
	}
	for _, page := range d.added {
		d.nav = append(d.nav, navLink{Name: page.Name, Path: page.Path})
	}
	return d, nil
}

// Route is the dashboard as a route of serve: every path under the
// prefix.
func (d *Dashboard) Route() app.Route { return app.Route{Pattern: d.cfg.Prefix + "/", Handler: d} }

// ServeHTTP serves the dashboard's pages under its prefix; a request
// outside it is not found.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) { d.handler.ServeHTTP(w, r) }

// routes is the dashboard's handler: its pages and those added, behind
// the access check and the cross-origin protection of its forms.
func (d *Dashboard) routes(pages []Page) (http.Handler, error) {
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
	mux.HandleFunc("GET "+p+"/flows", d.flowsPage)
	mux.HandleFunc("GET "+p+"/flows/{id}", d.flowPage)
	mux.HandleFunc("POST "+p+"/flows/{id}/cancel", d.operator(d.flowAction("cancel")))
	mux.HandleFunc("POST "+p+"/flows/{id}/retry", d.operator(d.flowAction("retry")))
	mux.HandleFunc("GET "+p+"/workers", d.workersPage)
	mux.HandleFunc("GET "+p+"/charts", d.chartsPage)
	if err := d.addPages(pages, mux); err != nil {
		return nil, err
	}
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
	return d.headers(csrf.Handler(d.guard(mux))), nil
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
