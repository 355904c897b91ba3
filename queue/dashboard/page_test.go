package dashboard_test

import (
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/queue/dashboard"
)

// lockedBuffer is a log written by the dashboard's handlers, read by the
// test.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// exportsPage is a page another module adds: a list, and an action that
// succeeds, refuses or fails by its key.
func exportsPage() dashboard.Page {
	return dashboard.Page{
		Name: "Exports",
		Path: "/exports",
		Template: `{{define "content"}}<h1>Exports</h1><table><tbody>{{range .Data}}<tr data-export="{{.}}"><td>{{.}}</td>` +
			`{{if $.Operator}}<td><form method="post" action="{{$.Here}}/{{.}}/redo"><input type="hidden" name="back" value="{{$.Here}}"><button>Redo</button></form></td>{{end}}</tr>{{end}}</tbody></table>{{end}}`,
		Show: func(*http.Request) (any, error) { return []string{"weekly", "monthly"}, nil },
		Actions: map[string]func(*http.Request, string) (url.Values, error){
			"redo": func(_ *http.Request, key string) (url.Values, error) {
				switch key {
				case "gone":
					return nil, &dashboard.Refusal{Status: http.StatusNotFound, Message: "No export is named gone."}
				case "broken":
					return nil, errors.New("connect to postgres://app:hunter2@db/app: refused")
				}
				return url.Values{"export": {key}}, nil
			},
		},
		Flash: func(action string, notes url.Values) string {
			if action != "redo" || !regexp.MustCompile(`^[a-z]+$`).MatchString(notes.Get("export")) {
				return ""
			}
			return "Redoing the " + notes.Get("export") + " export."
		},
	}
}

// TestAPageOfAnotherModule: a page another module adds has its link in
// the navigation and its place under the prefix; an operator's action
// returns to the page, which says what it did from notes it checks; a
// viewer is refused the action and sees no button; a refusal is answered
// with its status and message, an unknown action 404, and any other
// error 500 without its text, which goes to the log, its password
// masked.
func TestAPageOfAnotherModule(t *testing.T) {
	t.Parallel()
	logs := &lockedBuffer{}
	f := setup(t, dbtest.SQLiteURL(t), dashboard.Params{AccessFunc: byHeader, Pages: []dashboard.Page{exportsPage()},
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if body := f.get(t, "viewer", "/", http.StatusOK); !strings.Contains(body, `<a href="/navree/queue/exports">Exports</a>`) {
		t.Errorf("no link to the added page in the navigation:\n%s", body)
	}
	body := f.get(t, "viewer", "/exports", http.StatusOK)
	if got := rows(body, "data-export"); len(got) != 2 || got[0][1] != "weekly" || strings.Contains(body, "<button>Redo") ||
		!strings.Contains(body, `<a href="/navree/queue/exports" aria-current="page">Exports</a>`) || !strings.Contains(body, "<title>Exports") {
		t.Errorf("a viewer's page: %q\n%s", got, body)
	}
	if !strings.Contains(f.get(t, "operator", "/exports", http.StatusOK), `<form method="post" action="/navree/queue/exports/weekly/redo">`) {
		t.Error("an operator has no Redo")
	}

	r := f.do(t, "operator", "POST", "/exports/weekly/redo", url.Values{"back": {"/navree/queue/exports"}})
	if r.status != http.StatusSeeOther || r.location != "/navree/queue/exports?done=redo&done_export=weekly&done_page=exports&n=1" {
		t.Fatalf("the action: %d to %q\n%s", r.status, r.location, r.body)
	}
	if body := f.get(t, "operator", strings.TrimPrefix(r.location, "/navree/queue"), http.StatusOK); !strings.Contains(body, `role="status">Redoing the weekly export.</p>`) {
		t.Errorf("the page after the action does not say so:\n%s", body)
	}
	if body := f.get(t, "operator", "/exports?done=redo&done_page=exports&done_export=%3Cb%3Eevil&n=1", http.StatusOK); strings.Contains(body, `id="flash"`) {
		t.Errorf("a forged flash is shown:\n%s", body)
	}

	for _, c := range []struct {
		role, path string
		status     int
		says       string
	}{
		{"viewer", "/exports/weekly/redo", http.StatusForbidden, "only an operator may change jobs and queues"},
		{"operator", "/exports/gone/redo", http.StatusNotFound, "No export is named gone."},
		{"operator", "/exports/weekly/delete", http.StatusNotFound, "The page Exports has no action &#34;delete&#34;."},
		{"operator", "/exports/broken/redo", http.StatusInternalServerError, "The page could not do that; the app&#39;s log has the error."},
	} {
		r := f.do(t, c.role, "POST", c.path, url.Values{})
		if r.status != c.status || !strings.Contains(r.body, c.says) || strings.Contains(r.body, "hunter2") {
			t.Errorf("POST %s as %s: %d, want %d saying %q\n%s", c.path, c.role, r.status, c.status, c.says, r.body)
		}
	}
	if log := logs.String(); !strings.Contains(log, "queue dashboard: exports") || !strings.Contains(log, "xxxxx@db/app: refused") ||
		strings.Contains(log, "hunter2") {
		t.Errorf("the failed action is not logged, or logged with its password:\n%s", log)
	}
}

// TestABadPageIsRefused: a page whose path is not a word, or is taken,
// or that lacks what it needs, is refused when the dashboard is built,
// naming it.
func TestABadPageIsRefused(t *testing.T) {
	t.Parallel()
	page := func(change func(*dashboard.Page)) dashboard.Page {
		p := exportsPage()
		change(&p)
		return p
	}
	for _, c := range []struct {
		pages []dashboard.Page
		want  string
	}{
		{[]dashboard.Page{page(func(p *dashboard.Page) { p.Path = "/Exports" })},
			`dashboard: the page "Exports" has the path "/Exports"; want a slash and a word of lowercase letters, such as /schedules`},
		{[]dashboard.Page{page(func(p *dashboard.Page) { p.Path = "/jobs" })},
			`dashboard: the page "Exports" has the path "/jobs", which the dashboard or another page has already`},
		{[]dashboard.Page{exportsPage(), exportsPage()},
			`dashboard: the page "Exports" has the path "/exports", which the dashboard or another page has already`},
		{[]dashboard.Page{page(func(p *dashboard.Page) { p.Show = nil })},
			`dashboard: the page at /exports needs a Name, a Template and Show`},
		{[]dashboard.Page{page(func(p *dashboard.Page) { p.Template = `{{define "content"}}` })},
			`dashboard: parse the template of the page "Exports": template: :1: unexpected EOF`},
	} {
		if _, err := dashboard.New(dashboard.Params{Inspector: operatorSetup(t).q.Inspector(), Pages: c.pages}); err == nil || err.Error() != c.want {
			t.Errorf("New: %v\nwant %s", err, c.want)
		}
	}
}
