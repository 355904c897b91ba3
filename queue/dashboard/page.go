package dashboard

import (
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/navree/navree/config"
	"go.uber.org/fx"
)

// A Page is a page another module adds to the dashboard, as a module
// adds routes to serve: the schedule module adds its schedules page so.
// It has a link in the navigation and answers under the dashboard's
// prefix, behind its access rules and its protection of forms: GET Path
// shows it, and POST Path/{key}/{action} runs an action, for operators
// alone. Give it with [AddPage], or in [Params].Pages.
type Page struct {
	// Name is the link's text and the page's title, such as "Schedules".
	Name string
	// Path is where it answers under the prefix, such as "/schedules":
	// a slash and a word of lowercase letters.
	Path string
	// Template is the page's html/template, run within the dashboard's
	// layout: it defines "content", and reads .Data (what Show returned),
	// .Prefix (the dashboard's), .Here (the page's own address, the back
	// of its actions' forms) and .Operator (whether the request may act).
	Template string
	// Show reads what the page shows. Its error is logged and answered
	// 500, unless it is a [*Refusal].
	Show func(r *http.Request) (any, error)
	// Actions are what an operator may do from the page, by name, to the
	// row key. An action returns notes for its flash, which go back in
	// the address of the page it returns to, or an error: a [*Refusal] is
	// answered with its status and message, any other logged and
	// answered 500.
	Actions map[string]func(r *http.Request, key string) (url.Values, error)
	// Flash says what an action did from its notes, or "" to say nothing.
	// The notes come back in the page's address, where anyone may write
	// any: Flash checks them.
	Flash func(action string, notes url.Values) string
}

// Refusal is an error of a page that the dashboard answers with its
// status and its message, which the user reads.
type Refusal struct {
	Status  int
	Message string
}

func (r *Refusal) Error() string { return r.Message }

// AddPage adds the page that build returns (a constructor fx calls with
// its parameters) to the app's dashboard.
//
//	dashboard.AddPage(func(s *schedule.Scheduler) dashboard.Page { return schedule.DashboardPage(s) })
func AddPage(build any) fx.Option {
	return fx.Provide(fx.Annotate(build, fx.ResultTags(`group:"dashboard.pages"`)))
}

// checkPage reports what is wrong with p, naming it.
func checkPage(p Page, taken map[string]bool) error {
	word := strings.TrimPrefix(p.Path, "/")
	ok := strings.HasPrefix(p.Path, "/") && word != ""
	for _, c := range word {
		ok = ok && c >= 'a' && c <= 'z'
	}
	switch {
	case !ok:
		return fmt.Errorf("dashboard: the page %q has the path %q; want a slash and a word of lowercase letters, such as /schedules", p.Name, p.Path)
	case taken[word]:
		return fmt.Errorf("dashboard: the page %q has the path %q, which the dashboard or another page has already", p.Name, p.Path)
	case p.Name == "" || p.Show == nil || p.Template == "":
		return fmt.Errorf("dashboard: the page at %s needs a Name, a Template and Show", p.Path)
	}
	return nil
}

// builtInPaths are the first words of the dashboard's own addresses.
var builtInPaths = []string{"partials", "jobs", "failed", "queues", "flows", "workers", "charts", "bulk", "static"}

// addPages checks the pages, parses their templates and routes them.
func (d *Dashboard) addPages(pages []Page, mux *http.ServeMux) error {
	taken := map[string]bool{}
	for _, w := range builtInPaths {
		taken[w] = true
	}
	for _, p := range pages {
		if err := checkPage(p, taken); err != nil {
			return err
		}
		taken[strings.TrimPrefix(p.Path, "/")] = true
		t, err := d.pages["layout"].Clone()
		if err == nil {
			_, err = t.Parse(p.Template)
		}
		if err != nil {
			return fmt.Errorf("dashboard: parse the template of the page %q: %w", p.Name, err)
		}
		d.pages["page "+p.Path] = t
		d.added = append(d.added, p)
		prefix := d.cfg.Prefix + p.Path
		mux.HandleFunc("GET "+prefix, func(w http.ResponseWriter, r *http.Request) {
			data, err := p.Show(r)
			if err != nil {
				d.pageFailed(w, r, p, err)
				return
			}
			v := d.view(r, p.Name, p.Path, data)
			v.Here = prefix
			d.renderTemplate(w, r, http.StatusOK, d.pages["page "+p.Path], v)
		})
		mux.HandleFunc("POST "+prefix+"/{key}/{action}", d.operator(func(w http.ResponseWriter, r *http.Request) {
			name, key := r.PathValue("action"), r.PathValue("key")
			act, ok := p.Actions[name]
			if !ok {
				d.fail(w, r, http.StatusNotFound, fmt.Sprintf("The page %s has no action %q.", p.Name, name))
				return
			}
			notes, err := act(r, key)
			if err != nil {
				d.pageFailed(w, r, p, err)
				return
			}
			d.logger.InfoContext(r.Context(), "queue dashboard: "+strings.ToLower(p.Name)+": "+name, "key", key, "remote_addr", r.RemoteAddr)
			extra := []string{"page", strings.TrimPrefix(p.Path, "/")}
			for k, vs := range notes {
				if len(vs) > 0 {
					extra = append(extra, k, vs[0])
				}
			}
			d.done(w, r, name, 1, extra...)
		}))
	}
	return nil
}

// pageFailed answers an error of an added page.
func (d *Dashboard) pageFailed(w http.ResponseWriter, r *http.Request, p Page, err error) {
	if refusal, ok := errors.AsType[*Refusal](err); ok {
		d.fail(w, r, refusal.Status, refusal.Message)
		return
	}
	// A page's error is another module's: a password it holds (a DSN) is
	// masked before it is logged.
	d.logger.ErrorContext(r.Context(), "queue dashboard: "+strings.ToLower(p.Name), "error", config.Redact(err.Error()), "remote_addr", r.RemoteAddr)
	d.fail(w, r, http.StatusInternalServerError, "The page could not do that; the app's log has the error.")
}

// pageFlash is what an added page says of the action done, if the
// address names one.
func (d *Dashboard) pageFlash(q url.Values) string {
	page := q.Get("done_page")
	if page == "" {
		return ""
	}
	for _, p := range d.added {
		if p.Path == "/"+page && p.Flash != nil {
			notes := url.Values{}
			for k, vs := range q {
				if name, ok := strings.CutPrefix(k, "done_"); ok && name != "page" {
					notes[name] = vs
				}
			}
			return p.Flash(q.Get("done"), notes)
		}
	}
	return ""
}

// navLink is a link of the navigation to an added page.
type navLink struct {
	Name, Path string
}

// renderTemplate writes t's page with v, or an error page.
func (d *Dashboard) renderTemplate(w http.ResponseWriter, r *http.Request, status int, t *template.Template, v any) {
	var b strings.Builder
	if err := t.ExecuteTemplate(&b, "layout", v); err != nil {
		d.logger.ErrorContext(r.Context(), "queue dashboard: render", "error", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}
