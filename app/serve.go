package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"time"

	"github.com/navree/navree/config"
	"github.com/urfave/cli/v2"
	"go.uber.org/fx"
)

// HTTPConfig is the [http] section of the configuration.
type HTTPConfig struct {
	// Addr is where serve listens; default "127.0.0.1:8080".
	Addr string `koanf:"addr" validate:"required"`
	// ShutdownTimeoutMs is how long serve waits for requests in flight
	// when it stops; default 10000.
	ShutdownTimeoutMs int `koanf:"shutdown_timeout_ms" validate:"min=0"`
}

// Route is an HTTP route a module contributes to serve. Pattern is an
// http.ServeMux pattern, such as "GET /contacts/{id}".
type Route struct {
	Pattern string
	Handler http.Handler
}

// MetricsRoute is the route of the app's metrics endpoint, which
// app/metrics provides when metrics are on (its Handler nil when off).
// serve serves it among the routes; a process that serves none of them
// serves it on an HTTP server of its own: queue:work --health-addr,
// beside its health checks, so that each worker process can be scraped.
type MetricsRoute struct{ Route }

// Middleware wraps every route's handler. Middleware with a lower Order
// runs first (is outermost).
type Middleware struct {
	Order int
	Wrap  func(http.Handler) http.Handler
}

// Routes adds routes to serve.
func Routes(routes ...Route) fx.Option { return supplyGroup("app.routes", routes) }

// AsRoute annotates a constructor of a [Route] for fx.Provide, adding the
// route to serve.
func AsRoute(constructor any) any {
	return fx.Annotate(constructor, fx.ResultTags(`group:"app.routes"`))
}

// AsMiddleware annotates a constructor of a [Middleware] for fx.Provide.
func AsMiddleware(constructor any) any {
	return fx.Annotate(constructor, fx.ResultTags(`group:"app.middleware"`))
}

// Handler is the handler serve runs: every route on one http.ServeMux,
// wrapped in every middleware. Modules contribute to it through fx.
type Handler struct{ http.Handler }

// NewHandler builds the app's [Handler] from its routes and middleware. A
// pattern registered twice is an error that names it.
func NewHandler(routes []Route, middleware []Middleware) (h Handler, err error) {
	mux := http.NewServeMux()
	for _, r := range routes {
		if err := handle(mux, r); err != nil {
			return Handler{}, err
		}
	}
	var handler http.Handler = mux
	sorted := append([]Middleware(nil), middleware...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Order > sorted[j].Order })
	for _, m := range sorted {
		handler = m.Wrap(handler)
	}
	return Handler{handler}, nil
}

// browsable is addr as a browser on this machine reaches it: 127.0.0.1
// for an address of every interface (0.0.0.0, ::).
func browsable(addr net.Addr) string {
	if tcp, ok := addr.(*net.TCPAddr); ok && (tcp.IP == nil || tcp.IP.IsUnspecified()) {
		return net.JoinHostPort("127.0.0.1", fmt.Sprint(tcp.Port))
	}
	return addr.String()
}

// handle registers r, turning ServeMux's panic on a bad or duplicate
// pattern into an error.
func handle(mux *http.ServeMux, r Route) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("route %q: %v", r.Pattern, p)
		}
	}()
	mux.Handle(r.Pattern, routed(r.Handler))
	return nil
}

type serveIn struct {
	fx.In
	Handler   Handler
	Routes    []Route        `group:"app.routes"`
	AppConfig *config.Config `optional:"true"`
	Config    HTTPConfig
	Logger    *slog.Logger
}

func (a *App) serveCommand() Command {
	return Command{
		Name:  "serve",
		Usage: "Serve the app over HTTP",
		Action: Uses(func(c *cli.Context, p serveIn) error {
			ln, err := net.Listen("tcp", p.Config.Addr)
			if err != nil {
				return fmt.Errorf("serve: listen on %s (http.addr): %w", p.Config.Addr, err)
			}
			srv := &http.Server{Handler: p.Handler, ReadHeaderTimeout: 10 * time.Second,
				ErrorLog: slog.NewLogLogger(p.Logger.Handler(), slog.LevelError)}
			fmt.Fprintf(c.App.Writer, "Serving HTTP on http://%s (Ctrl-C to stop)\n", ln.Addr())
			if _, welcome := a.withWelcome(p.Routes, p.AppConfig); welcome {
				base := "http://" + browsable(ln.Addr())
				fmt.Fprintf(c.App.Writer, "Welcome page (development): %s/\n", base)
				for _, page := range pagesOf(p.Routes) {
					fmt.Fprintf(c.App.Writer, "  %s%s\n", base, page)
				}
			}
			served := make(chan error, 1)
			go func() { served <- srv.Serve(ln) }()
			select {
			case err := <-served:
				return fmt.Errorf("serve: %w", err)
			case <-c.Context.Done():
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(p.Config.ShutdownTimeoutMs)*time.Millisecond)
			defer cancel()
			if err := srv.Shutdown(ctx); err != nil {
				return fmt.Errorf("serve: shutdown: %w", err)
			}
			if err := <-served; !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("serve: %w", err)
			}
			fmt.Fprintln(c.App.Writer, "Stopped serving HTTP.")
			return nil
		}),
	}
}
