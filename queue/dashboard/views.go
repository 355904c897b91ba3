package dashboard

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/navree/navree/queue"
)

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
	// Pages are the pages other modules added (see Page): the navigation
	// links them.
	Pages []navLink
	// Here is an added page's own address.
	Here string
	Data any
}

func (d *Dashboard) view(r *http.Request, title, nav string, data any) view {
	role := roleOf(r.Context())
	return view{Prefix: d.cfg.Prefix, Title: title, Nav: nav, Role: role, Operator: role >= Operator,
		Refresh: fmt.Sprintf("every %dms", d.cfg.RefreshMs), Assets: d.assets, Flash: cmp.Or(flash(r.URL.Query()), d.pageFlash(r.URL.Query())), Pages: d.nav, Data: data}
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
