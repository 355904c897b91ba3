package dashboard_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/dashboard"
)

// Every page and asset a request may ask for, and the actions.
var everyPage = []string{"/", "/partials/queues", "/jobs", "/failed", "/jobs/0190c0de-0000-7000-8000-000000000000?state=failed",
	"/bulk?action=retry", "/flows", "/static/htmx.min.js", "/static/dashboard.css", "/no-such-page"}

func TestClosedWithoutAnAccessFunc(t *testing.T) {
	t.Parallel()
	f := setup(t, dbtest.MigratedSQLiteURL(t, queueSets...), dashboard.Params{}) // not in development
	ids := f.failed(t, "boom")
	for _, path := range everyPage {
		for _, role := range []string{"", "operator"} { // no access function reads the header
			if r := f.do(t, role, "GET", path, nil); r.status != http.StatusForbidden || !strings.Contains(r.body, "dashboard.Access") {
				t.Errorf("GET %s: %d, want 403 naming dashboard.Access\n%s", path, r.status, r.body)
			}
		}
	}
	r := f.do(t, "", "POST", "/failed/"+ids[0]+"/retry", url.Values{})
	if r.status != http.StatusForbidden {
		t.Errorf("POST retry: %d, want 403", r.status)
	}
	if got := f.ids(t, queue.StateFailed); len(got) != 1 {
		t.Errorf("after a refused retry the failed jobs are %v, want the one", got)
	}
}

// In development, with no access function, a request straight from the
// loopback interface is an operator; one from elsewhere, or through a
// proxy, is refused.
func TestDevelopmentOpensToLoopbackOnly(t *testing.T) {
	t.Parallel()
	f := setup(t, dbtest.MigratedSQLiteURL(t, queueSets...), dashboard.Params{Development: true})
	if body := f.get(t, "", "/", http.StatusOK); !strings.Contains(body, `<span class="role" id="role">operator</span>`) {
		t.Errorf("a loopback request in development is not an operator:\n%s", body)
	}
	ids := f.failed(t, "boom")
	if r := f.do(t, "", "POST", "/failed/"+ids[0]+"/retry", url.Values{}); r.status != http.StatusSeeOther {
		t.Errorf("POST retry from loopback in development: %d, want 303\n%s", r.status, r.body)
	}

	d, err := dashboard.New(dashboard.Params{Inspector: f.q.Inspector(), Development: true})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		remote string
		header [2]string
		want   int
	}{
		{"ipv4 loopback", "127.0.0.1:50000", [2]string{}, http.StatusOK},
		{"ipv6 loopback", "[::1]:50000", [2]string{}, http.StatusOK},
		{"another address", "192.0.2.10:50000", [2]string{}, http.StatusForbidden},
		{"a private address", "10.0.0.7:50000", [2]string{}, http.StatusForbidden},
		{"a proxy on this machine", "127.0.0.1:50000", [2]string{"X-Forwarded-For", "203.0.113.9"}, http.StatusForbidden},
		{"a proxy saying Forwarded", "127.0.0.1:50000", [2]string{"Forwarded", "for=203.0.113.9"}, http.StatusForbidden},
	}
	for _, tt := range tests {
		req := httptest.NewRequest("GET", "/navree/queue/", nil)
		req.RemoteAddr = tt.remote
		if tt.header[0] != "" {
			req.Header.Set(tt.header[0], tt.header[1])
		}
		w := httptest.NewRecorder()
		d.ServeHTTP(w, req)
		if w.Code != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, w.Code, tt.want)
		}
	}
}

func TestRolesDecideWhatARequestMayDo(t *testing.T) {
	t.Parallel()
	f := operatorSetup(t)
	ids := f.failed(t, "boom", "bang")
	for _, path := range everyPage[:len(everyPage)-1] {
		if path == everyPage[4] || path == everyPage[5] {
			continue // a job that does not exist; a bulk action's confirmation, below
		}
		f.get(t, "", path, http.StatusForbidden)
		f.get(t, "viewer", path, http.StatusOK)
		f.get(t, "operator", path, http.StatusOK)
	}

	viewer := f.get(t, "viewer", "/failed", http.StatusOK)
	if strings.Contains(viewer, "<form method=\"post\"") || strings.Contains(viewer, "retry-all") {
		t.Errorf("a viewer is shown action buttons:\n%s", viewer)
	}
	if op := f.get(t, "operator", "/failed", http.StatusOK); !strings.Contains(op, `action="/navree/queue/failed/`+ids[0]+`/retry"`) {
		t.Errorf("an operator is shown no Retry:\n%s", op)
	}

	// A viewer's action is refused, and changes nothing.
	for _, r := range []response{
		f.do(t, "viewer", "POST", "/failed/"+ids[0]+"/retry", url.Values{}),
		f.do(t, "viewer", "POST", "/bulk", url.Values{"action": {"retry"}, "confirm": {"yes"}}),
		f.do(t, "", "POST", "/bulk", url.Values{"action": {"retry"}, "confirm": {"yes"}}),
	} {
		if r.status != http.StatusForbidden {
			t.Errorf("an action without the operator role: %d, want 403\n%s", r.status, r.body)
		}
	}
	if got := f.ids(t, queue.StateFailed); len(got) != 2 {
		t.Fatalf("the refused actions changed the failed jobs: %v", got)
	}
	if r := f.do(t, "operator", "POST", "/failed/"+ids[0]+"/retry", url.Values{}); r.status != http.StatusSeeOther {
		t.Errorf("an operator's retry: %d, want 303\n%s", r.status, r.body)
	}
}

// A form posted from another site is refused by the cross-origin
// protection (http.CrossOriginProtection); the same form from the
// dashboard's own pages passes.
func TestCrossOriginFormsAreRefused(t *testing.T) {
	t.Parallel()
	f := operatorSetup(t)
	ids := f.failed(t, "boom")
	post := func(header map[string]string) int {
		req, _ := http.NewRequest("POST", f.url+"/failed/"+ids[0]+"/retry", strings.NewReader(""))
		req.Header.Set(roleHeader, "operator")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, h := range []map[string]string{
		{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"},
		{"Sec-Fetch-Site": "same-site", "Origin": "https://other.localhost"},
		{"Origin": "https://evil.example"}, // an older browser: Origin only
	} {
		if got := post(h); got != http.StatusForbidden {
			t.Errorf("POST with %v: %d, want 403", h, got)
		}
	}
	if got := f.ids(t, queue.StateFailed); len(got) != 1 {
		t.Fatalf("a cross-origin POST retried the job: failed jobs %v", got)
	}
	if got := post(map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": f.srv.URL}); got != http.StatusSeeOther {
		t.Errorf("POST from the dashboard's origin: %d, want 303", got)
	}
	// Actions are POSTs: a GET of an action's URL does nothing.
	if r := f.do(t, "operator", "GET", "/failed/"+ids[0]+"/retry", nil); r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != "POST" {
		t.Errorf("GET of the retry URL: %d, Allow %q; want 405, POST", r.status, r.header.Get("Allow"))
	}
	if got := f.ids(t, queue.StateFailed); len(got) != 0 {
		t.Errorf("failed jobs %v, want none: the same-origin POST retried the one", got)
	}
}

func TestPagesSetSecurityHeaders(t *testing.T) {
	t.Parallel()
	f := operatorSetup(t)
	for _, path := range []string{"/", "/no-such-page"} {
		r := f.do(t, "operator", "GET", path, nil)
		for k, want := range map[string]string{
			"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
				"form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
			"X-Content-Type-Options": "nosniff",
			"X-Frame-Options":        "DENY",
			"Cache-Control":          "no-store",
			"Content-Type":           "text/html; charset=utf-8",
		} {
			if got := r.header.Get(k); got != want {
				t.Errorf("GET %s: %s = %q, want %q", path, k, got, want)
			}
		}
	}
	r := f.do(t, "operator", "GET", "/static/htmx.min.js", nil)
	if r.status != http.StatusOK || !strings.Contains(r.body, `version:"2.0.11"`) || r.header.Get("Cache-Control") != "private, max-age=86400" {
		t.Errorf("htmx: %d, Cache-Control %q, version 2.0.11 %v", r.status, r.header.Get("Cache-Control"), strings.Contains(r.body, `version:"2.0.11"`))
	}
	if r := f.do(t, "operator", "GET", "/static/", nil); r.status != http.StatusNotFound {
		t.Errorf("the assets' folder: %d, want 404 (no listing)", r.status)
	}
}
