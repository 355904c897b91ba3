package dashboard_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/config"
	"github.com/navree/navree/db"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/dashboard"
	"github.com/navree/navree/schedule"
	"github.com/navree/navree/testing/apptest"
	"go.uber.org/fx"
)

// newApp is an app with the queue and the dashboard, configured by
// settings, on a fresh SQLite database; its HTTP server is serve's
// handler, behind every middleware (db.Middleware's unit of work).
func newApp(t *testing.T, settings map[string]any, opts ...fx.Option) (*apptest.App, *queue.Queue) {
	t.Helper()
	var q *queue.Queue
	a := apptest.New(t, append([]fx.Option{db.Module(), queue.Module(), dashboard.Module(), apptest.TempDatabase(), apptest.Config(settings),
		queue.HandleFunc(func(_ context.Context, j Export, _ queue.JobContext) error { return errors.New(j.Reason) }),
		fx.Populate(&q)}, opts...)...)
	return a, q
}

func status(t *testing.T, a *apptest.App, method, path string) (int, string) {
	t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest(method, a.HTTP().URL+path, nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}

func TestModuleServesTheDashboardWhenEnabled(t *testing.T) {
	t.Parallel()
	off, _ := newApp(t, nil)
	if got, _ := status(t, off, "GET", "/navree/queue/"); got != http.StatusNotFound {
		t.Errorf("disabled (the default): GET /navree/queue/ is %d, want 404", got)
	}

	// apptest's app runs in development and its server on 127.0.0.1.
	on, _ := newApp(t, map[string]any{"dashboard.enabled": true})
	if got, _ := status(t, on, "GET", "/navree/queue/"); got != http.StatusOK {
		t.Errorf("enabled: GET /navree/queue/ is %d, want 200", got)
	}
	if got, loc := status(t, on, "GET", "/navree/queue"); got != http.StatusTemporaryRedirect || loc != "/navree/queue/" {
		t.Errorf("GET /navree/queue: %d to %q, want 307 to /navree/queue/", got, loc)
	}

	moved, _ := newApp(t, map[string]any{"dashboard.enabled": true, "dashboard.prefix": "/admin/jobs"})
	if got, _ := status(t, moved, "GET", "/admin/jobs/failed"); got != http.StatusOK {
		t.Errorf("prefix /admin/jobs: GET /admin/jobs/failed is %d, want 200", got)
	}
	if got, _ := status(t, moved, "GET", "/navree/queue/"); got != http.StatusNotFound {
		t.Errorf("prefix /admin/jobs: GET /navree/queue/ is %d, want 404", got)
	}

	// An access function, once given, decides alone: loopback is no
	// longer enough.
	closed, _ := newApp(t, map[string]any{"dashboard.enabled": true}, dashboard.Access(byHeader))
	if got, _ := status(t, closed, "GET", "/navree/queue/"); got != http.StatusForbidden {
		t.Errorf("with an access function, a request without a role is %d, want 403", got)
	}
}

// Behind serve's unit of work, a retry is stored (the dashboard's calls
// run in transactions of their own).
func TestRetryThroughTheApp(t *testing.T) {
	t.Parallel()
	a, q := newApp(t, map[string]any{"dashboard.enabled": true, "queue.queues": []string{"exports"}})
	id, err := q.Dispatch(ctx, Export{Reason: "boom"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.RunPending(ctx); err != nil {
		t.Fatal(err)
	}
	for _, action := range []url.Values{{}, {"action": {"retry"}, "confirm": {"yes"}}} {
		path := "/navree/queue/failed/" + id + "/retry"
		if len(action) > 0 {
			path = "/navree/queue/bulk"
		}
		req, _ := http.NewRequest("POST", a.HTTP().URL+path, strings.NewReader(action.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("POST %s: %d, want 303", path, resp.StatusCode)
		}
		jobs, _, err := q.Inspector().Jobs(ctx, queue.JobsQuery{State: queue.StateWaiting})
		if err != nil || len(jobs) != 1 || jobs[0].ID != id {
			t.Fatalf("after POST %s the waiting jobs are %+v, %v; want %s", path, jobs, err, id)
		}
		if _, err := q.RunPending(ctx); err != nil { // it fails again, for the bulk retry
			t.Fatal(err)
		}
	}
}

func TestConfigSection(t *testing.T) {
	t.Parallel()
	def := config.Definition{Name: "dashboard", Defaults: dashboard.DefaultConfig()}
	c, err := config.New(config.Sources{}, def)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := config.Get[dashboard.Config](c, "dashboard")
	if got.Enabled || got.Prefix != "/navree/queue" || !slices.Equal(got.MaskKeys, []string{"password", "secret", "token"}) || got.RefreshMs != 5000 {
		t.Errorf("the defaults: %+v", got)
	}
	c, err = config.New(config.Sources{Environ: []string{"APP_DASHBOARD__ENABLED=true", "APP_DASHBOARD__MASK_KEYS=password,api_key"}}, def)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := config.Get[dashboard.Config](c, "dashboard"); !got.Enabled || !slices.Equal(got.MaskKeys, []string{"password", "api_key"}) {
		t.Errorf("from the environment: %+v", got)
	}
	_, err = config.New(config.Sources{Overrides: map[string]any{"dashboard.prefix": "admin/queue/"}}, def)
	if want := `config: invalid value for dashboard.prefix: "admin/queue/" (from overrides); allowed: a path such as /navree/queue`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("a bad prefix: %v\nwant %s…", err, want)
	}
	// A dot segment would take the dashboard's home, and every redirect
	// to it, out of the prefix.
	for _, prefix := range []string{"/admin/../queue", "/admin/./queue", "/admin/..", "/.."} {
		_, err = config.New(config.Sources{Overrides: map[string]any{"dashboard.prefix": prefix}}, def)
		want := `config: invalid value for dashboard.prefix: "` + prefix + `" (from overrides); allowed: a path such as /navree/queue: '/' then letters, digits, '-', '_', '.' or '/', not ending in '/', with no '.' or '..' segment`
		if err == nil || err.Error() != want {
			t.Errorf("prefix %s: %v\nwant %s", prefix, err, want)
		}
	}
}

// TestServeBuildsNoHandler: serve, dashboard and all, builds none of the
// app's job handlers (nor what they need), as docs/events.md promises:
// the dashboard takes the queue's Inspector, not the *Queue that runs
// jobs. A handler whose constructor fails fails queue:work alone.
func TestServeBuildsNoHandler(t *testing.T) {
	t.Parallel()
	built := 0
	failing := queue.Register[Export](func() (queue.Handler[Export], error) {
		built++
		return nil, errors.New("the export handler needs a bucket")
	})
	dir := t.TempDir()
	newApp := func(out *syncWriter) *app.App {
		a := app.New(config.Module(config.Sources{Overrides: map[string]any{
			"database.url": "sqlite://" + dir + "/app.db", "dashboard.enabled": true, "http.addr": "127.0.0.1:0"}}),
			db.Module(), queue.Module(), dashboard.Module(), failing)
		a.Name, a.Stdout, a.Stderr = "crm", out, out
		return a
	}
	if err := newApp(&syncWriter{}).Run(context.Background(), []string{"migrate"}); err != nil {
		t.Fatal(err)
	}

	base, stop, done := serve(t, newApp)
	resp, err := http.Get(base + "/navree/queue/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	stop()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	if resp.StatusCode != http.StatusOK || built != 0 {
		t.Fatalf("serve answered the dashboard %d and built the handler %d time(s); want 200 and none", resp.StatusCode, built)
	}

	err = newApp(&syncWriter{}).Run(context.Background(), []string{"queue:work", "--stop-when-empty"})
	if err == nil || !strings.Contains(err.Error(), "the export handler needs a bucket") || built != 1 {
		t.Fatalf("queue:work: %v, the handler built %d time(s); want its constructor's error, once", err, built)
	}
}

// serve runs serve with the app newApp makes until stop is called, and
// returns the address it serves on and what serve returned, once it has.
func serve(t *testing.T, newApp func(*syncWriter) *app.App) (base string, stop func(), done <-chan error) {
	t.Helper()
	out := &syncWriter{lines: make(chan string, 100)}
	ctx, stop := context.WithCancel(context.Background())
	ended := make(chan error, 1)
	go func() { ended <- newApp(out).Run(ctx, []string{"serve"}) }()
	for base == "" {
		select {
		case line := <-out.lines:
			if rest, ok := strings.CutPrefix(line, "Serving HTTP on "); ok {
				base = strings.TrimSuffix(rest, " (Ctrl-C to stop)")
			}
		case err := <-ended:
			stop()
			t.Fatalf("serve ended before serving: %v\n%s", err, out.buf.String())
		}
	}
	return base, stop, ended
}

// syncWriter collects what an app prints, and sends each line to lines
// when it is set.
type syncWriter struct {
	mu    sync.Mutex
	buf   strings.Builder
	lines chan string
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if w.lines != nil {
		for _, line := range strings.Split(strings.TrimSuffix(string(p), "\n"), "\n") {
			select {
			case w.lines <- line:
			default:
			}
		}
	}
	return len(p), nil
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestTheScheduleModuleAddsItsPage: in an app with the schedule module
// the dashboard serves its schedules page and links it; the dashboard
// itself knows nothing of schedules.
func TestTheScheduleModuleAddsItsPage(t *testing.T) {
	t.Parallel()
	a, _ := newApp(t, map[string]any{"dashboard.enabled": true}, schedule.Module(), schedule.Every("crm.sync", 30*time.Second, Reminder{N: 1}))
	if got, _ := status(t, a, "GET", "/navree/queue/schedules"); got != http.StatusOK {
		t.Errorf("GET /navree/queue/schedules is %d, want 200", got)
	}
	without, _ := newApp(t, map[string]any{"dashboard.enabled": true})
	if got, _ := status(t, without, "GET", "/navree/queue/schedules"); got != http.StatusNotFound {
		t.Errorf("without the schedule module, GET /navree/queue/schedules is %d, want 404", got)
	}
}
