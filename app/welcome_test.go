package app_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/navree/navree/app"
	"github.com/navree/navree/config"
	"go.uber.org/fx"
)

// page is a route that answers its own name.
func page(pattern string) app.Route {
	return app.Route{Pattern: pattern, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "the app's "+pattern)
	})}
}

// handlerOf builds the app of opts in the environment env and returns the
// handler serve runs.
func handlerOf(t *testing.T, env string, opts ...fx.Option) app.Handler {
	t.Helper()
	var h app.Handler
	a := app.New(append([]fx.Option{config.Module(config.Sources{Env: env}), fx.Populate(&h)}, opts...)...)
	a.Name, a.Stdout, a.Stderr = "crm", io.Discard, io.Discard
	if _, err := a.Build(); err != nil {
		t.Fatal(err)
	}
	return h
}

func get(h http.Handler, method, path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec
}

// TestTheWelcomePage: in development, an app with no route of its own at
// / shows a page there linking its pages; not in production, and never
// in place of the app's own /.
func TestTheWelcomePage(t *testing.T) {
	pages := app.Routes(page("GET /mail/previews"), page("GET /mail/previews/{name}"), page("/navree/queue/"),
		page("GET /notifications"), page("POST /contacts"), page("GET /contacts/{$}"), page("admin.example.com/stats"))
	want := `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>crm</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40em;margin:3em auto;padding:0 1em}code{font-size:.9em}</style></head>
<body><h1>crm is running</h1>
<p>Its pages:</p>
<ul><li><a href="/contacts/">/contacts/</a></li><li><a href="/mail/previews">/mail/previews</a></li><li><a href="/navree/queue/">/navree/queue/</a></li><li><a href="/notifications">/notifications</a></li></ul>
<p>This page is served in development only, while no route of the app serves <code>/</code>.</p>
</body></html>
`
	for _, env := range []string{"", "development"} {
		rec := get(handlerOf(t, env, pages), "GET", "/")
		if rec.Code != 200 || rec.Body.String() != want || rec.Header().Get("Content-Type") != "text/html; charset=utf-8" {
			t.Fatalf("APP_ENV=%q: GET / = %d %q\n%s\nwant\n%s", env, rec.Code, rec.Header().Get("Content-Type"), rec.Body, want)
		}
	}
	if rec := get(handlerOf(t, "development"), "GET", "/"); rec.Code != 200 || !strings.Contains(rec.Body.String(), "It serves no page yet") {
		t.Fatalf("an app without routes: GET / = %d\n%s", rec.Code, rec.Body)
	}
	for _, env := range []string{"production", "staging"} {
		if rec := get(handlerOf(t, env, pages), "GET", "/"); rec.Code != http.StatusNotFound {
			t.Fatalf("APP_ENV=%s: GET / = %d %s, want 404", env, rec.Code, rec.Body)
		}
	}

	tests := []struct {
		root       string // the app's own route at /
		method     string
		wantStatus int
		wantBody   string
	}{
		{"GET /{$}", "GET", 200, "the app's GET /{$}"},
		{"/", "GET", 200, "the app's /"},
		{"/{path...}", "GET", 200, "the app's /{path...}"},
		{"POST /{$}", "GET", http.StatusMethodNotAllowed, "Method Not Allowed\n"},
		{"POST /{$}", "POST", 200, "the app's POST /{$}"},
	}
	for _, tt := range tests {
		rec := get(handlerOf(t, "", pages, app.Routes(page(tt.root))), tt.method, "/")
		if rec.Code != tt.wantStatus || rec.Body.String() != tt.wantBody {
			t.Errorf("with %q: %s / = %d %q, want %d %q", tt.root, tt.method, rec.Code, rec.Body, tt.wantStatus, tt.wantBody)
		}
	}
}

// TestServePrintsThePagesInDevelopment: serve's banner lists the welcome
// page and the pages it links, in development only.
func TestServePrintsThePagesInDevelopment(t *testing.T) {
	pages := app.Routes(page("GET /mail/previews"), page("/navree/queue/"), page("GET /notifications"))
	for _, env := range []string{"", "production"} {
		out, printed := lines(t)
		a := app.New(config.Module(config.Sources{Env: env, Overrides: map[string]any{"http.addr": "127.0.0.1:0"}}), pages)
		a.Name, a.Stdout, a.Stderr = "crm", out, io.Discard
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx, []string{"serve"}) }()
		base, _ := strings.CutPrefix(<-printed, "Serving HTTP on ")
		base = strings.TrimSuffix(base, " (Ctrl-C to stop)")
		if _, err := http.Get(base + "/healthz"); err != nil { // listening, so the banner is out
			t.Fatal(err)
		}
		stop()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		var got []string
		for line := <-printed; line != "Stopped serving HTTP."; line = <-printed {
			got = append(got, line)
		}
		want := fmt.Sprintf("[Welcome page (development): %[1]s/   %[1]s/mail/previews   %[1]s/navree/queue/   %[1]s/notifications]", base)
		if env == "production" {
			want = "[]"
		}
		if fmt.Sprint(got) != want {
			t.Errorf("APP_ENV=%q: serve printed %q, want %s", env, got, want)
		}
	}
}
