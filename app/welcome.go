package app

import (
	"html/template"
	"net/http"
	"slices"
	"strings"

	"github.com/navree/navree/config"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"
)

type handlerIn struct {
	fx.In
	Routes     []Route        `group:"app.routes"`
	Middleware []Middleware   `group:"app.middleware"`
	Config     *config.Config `optional:"true"`
	// TracerProvider is the app's, when it has one: each request then
	// gets a server span.
	TracerProvider trace.TracerProvider `optional:"true"`
}

// newHandler is the app's [Handler], the one serve runs: its routes, and
// in development the welcome page when no route takes /.
func (a *App) newHandler(p handlerIn) (Handler, error) {
	routes, _ := a.withWelcome(p.Routes, p.Config)
	h, err := NewHandler(routes, p.Middleware)
	if err == nil && p.TracerProvider != nil {
		h = Handler{traced(h, p.TracerProvider)}
	}
	return h, err
}

// development reports whether cfg is the configuration of development:
// no APP_ENV, or APP_ENV=development. Without a config it is unknown, and
// taken as not.
func development(cfg *config.Config) bool {
	return cfg != nil && (cfg.Env() == "" || cfg.Env() == "development")
}

// withWelcome returns routes and, in development when no route of them
// takes / (by any method), the welcome page at GET /{$}; and whether it
// added the page.
func (a *App) withWelcome(routes []Route, cfg *config.Config) ([]Route, bool) {
	if !development(cfg) || takesRoot(routes) {
		return routes, false
	}
	pages := pagesOf(routes)
	welcome := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		welcomePage.Execute(w, map[string]any{"Name": a.Name, "Pages": pages})
	})
	return append(slices.Clip(routes), Route{Pattern: "GET /{$}", Handler: welcome}), true
}

// takesRoot reports whether a route of routes serves / by some method.
// A route ServeMux refuses is left to NewHandler to report.
func takesRoot(routes []Route) bool {
	mux := http.NewServeMux()
	for _, r := range routes {
		_ = handle(mux, r)
	}
	for _, method := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
		req, _ := http.NewRequest(method, "/", nil)
		if _, pattern := mux.Handler(req); pattern != "" {
			return true
		}
	}
	return false
}

// pagesOf returns the paths of the pages routes serve, sorted: those of
// GET or of no method, on no host of their own, with no wildcard but a
// final {$}, such as /mail/previews and /navree/queue/; / aside.
func pagesOf(routes []Route) []string {
	var pages []string
	for _, r := range routes {
		pattern := strings.TrimSpace(r.Pattern)
		if method, rest, ok := strings.Cut(pattern, " "); ok {
			if method != "GET" {
				continue
			}
			pattern = strings.TrimSpace(rest)
		}
		path := strings.TrimSuffix(pattern, "{$}")
		if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, "{}") || path == "/" || slices.Contains(pages, path) {
			continue // on a host of its own, with a wildcard, or the root
		}
		pages = append(pages, path)
	}
	slices.Sort(pages)
	return pages
}

var welcomePage = template.Must(template.New("welcome").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Name}}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40em;margin:3em auto;padding:0 1em}code{font-size:.9em}</style></head>
<body><h1>{{.Name}} is running</h1>
{{if .Pages}}<p>Its pages:</p>
<ul>{{range .Pages}}<li><a href="{{.}}">{{.}}</a></li>{{end}}</ul>
{{else}}<p>It serves no page yet: modules add routes with <code>app.Routes</code>.</p>
{{end}}<p>This page is served in development only, while no route of the app serves <code>/</code>.</p>
</body></html>
`))
