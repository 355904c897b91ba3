package dashboard

import (
	"fmt"
	"log/slog"
	"path"
	"strings"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/config"
	"github.com/navree/navree/queue"
	"go.uber.org/fx"
)

// Config is the [dashboard] section of the configuration.
type Config struct {
	// Enabled mounts the dashboard on serve; default false.
	Enabled bool `koanf:"enabled"`
	// Prefix is the path the dashboard is served under, such as
	// "/admin/queue"; default "/navree/queue". It starts with '/' and does
	// not end with one, and has no "." or ".." segment.
	Prefix string `koanf:"prefix" validate:"required,max=200"`
	// MaskKeys are the JSON keys whose values a shown payload hides, at
	// any depth and in any letter case; default ["password", "secret",
	// "token"]. An empty list masks nothing.
	MaskKeys []string `koanf:"mask_keys"`
	// RefreshMs is how often the pages poll for fresh counts; default
	// 5000.
	RefreshMs int `koanf:"refresh_ms" validate:"min=1000,max=3600000"`
}

// DefaultConfig returns the defaults of the [dashboard] section.
func DefaultConfig() Config {
	return Config{Prefix: "/navree/queue", MaskKeys: []string{"password", "secret", "token"}, RefreshMs: 5000}
}

// Validate checks the prefix: a path of letters, digits, '-', '_', '.'
// and '/', starting with '/' and not ending with one, with no "." or ".."
// segment (which a browser would resolve out of the prefix).
func (c Config) Validate() error {
	if !validPrefix(c.Prefix) {
		return config.Invalid("dashboard.prefix", c.Prefix, "a path such as /navree/queue: '/' then letters, digits, '-', '_', '.' or '/', not ending in '/', with no '.' or '..' segment")
	}
	for _, k := range c.MaskKeys {
		if k == "" {
			return config.Invalid("dashboard.mask_keys", strings.Join(c.MaskKeys, ","), "JSON keys, none empty")
		}
	}
	return nil
}

func validPrefix(p string) bool {
	if len(p) < 2 || p[0] != '/' || p[len(p)-1] == '/' || path.Clean(p) != p {
		return false
	}
	for i := 1; i < len(p); i++ {
		c := p[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '/') {
			return false
		}
	}
	return true
}

// withDefaults fills the zero fields of a Config written in code and
// checks it. A nil MaskKeys takes the default; an empty one masks
// nothing.
func (c Config) withDefaults() (Config, error) {
	def := DefaultConfig()
	if c.Prefix == "" {
		c.Prefix = def.Prefix
	}
	if c.MaskKeys == nil {
		c.MaskKeys = def.MaskKeys
	}
	if c.RefreshMs == 0 {
		c.RefreshMs = def.RefreshMs
	}
	if c.RefreshMs < 1000 {
		return c, fmt.Errorf("dashboard: refresh_ms is %d; want 1000 or more", c.RefreshMs)
	}
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("dashboard: %w", err)
	}
	return c, nil
}

// refresh is how often the pages poll.
func (c Config) refresh() time.Duration { return time.Duration(c.RefreshMs) * time.Millisecond }

// Params are what [New] builds a Dashboard from.
type Params struct {
	Config Config
	// Inspector is the read and admin side of the queue the dashboard
	// shows and acts on (the queue module provides it; without fx,
	// [queue.Queue.Inspector]).
	Inspector *queue.Inspector
	// Pages are the pages other modules add (see Page): the schedule
	// module adds its schedules page so.
	Pages []Page
	// AccessFunc decides the role of each request. Nil closes the
	// dashboard: every request gets 403 Forbidden, except, when
	// Development is set, one from a loopback address, which is an
	// [Operator].
	AccessFunc AccessFunc
	// Development says the app runs in development (no APP_ENV, or
	// APP_ENV=development), which opens the dashboard to loopback
	// requests when there is no AccessFunc.
	Development bool
	Clock       app.Clock    // the time of the backlog trend; the system clock when nil
	Logger      *slog.Logger // logs each action; nil logs nothing
}

// Module is the queue dashboard, configured by the [dashboard] section.
// When dashboard.enabled is true it adds the dashboard to serve, under
// dashboard.prefix; it needs the queue module, and an access function
// ([Access]) anywhere but on a developer's machine.
func Module() fx.Option { return module(config.Section("dashboard", DefaultConfig())) }

// ModuleWith is [Module] configured in code instead: zero fields of cfg
// take their defaults (set Enabled to serve it).
//
//	dashboard.ModuleWith(dashboard.Config{Enabled: true, Prefix: "/admin/queue"})
func ModuleWith(cfg Config) fx.Option { return module(fx.Supply(fx.Private, cfg)) }

func module(cfg fx.Option) fx.Option {
	return fx.Module("dashboard",
		cfg,
		fx.Provide(fx.Annotate(routes, fx.ResultTags(`group:"app.routes,flatten"`))),
	)
}

// Access gives the app's dashboard the function that decides each
// request's role. Give it once.
//
//	dashboard.Access(func(r *http.Request) dashboard.Role {
//		if u, ok := auth.User(r.Context()); ok && u.Admin {
//			return dashboard.Operator
//		}
//		return dashboard.NoAccess
//	})
func Access(f AccessFunc) fx.Option {
	return fx.Provide(func() AccessFunc { return f })
}

type routesIn struct {
	fx.In
	Config     Config
	AppConfig  *config.Config   `optional:"true"`
	Inspector  *queue.Inspector `optional:"true"`
	Pages      []Page           `group:"dashboard.pages"`
	AccessFunc AccessFunc       `optional:"true"`
	Clock      app.Clock        `optional:"true"`
	Logger     *slog.Logger     `optional:"true"`
}

// routes is the dashboard's route when it is enabled, none otherwise.
func routes(p routesIn) ([]app.Route, error) {
	if !p.Config.Enabled {
		return nil, nil
	}
	if p.Inspector == nil {
		return nil, fmt.Errorf("dashboard: dashboard.enabled is true, but the app has no queue: add queue.Module()")
	}
	// Without a config (ModuleWith in an app without config.Module) the
	// environment is unknown: the dashboard stays closed.
	dev := p.AppConfig != nil && (p.AppConfig.Env() == "" || p.AppConfig.Env() == "development")
	d, err := New(Params{Config: p.Config, Inspector: p.Inspector, Pages: p.Pages, AccessFunc: p.AccessFunc, Development: dev, Clock: p.Clock, Logger: p.Logger})
	if err != nil {
		return nil, err
	}
	return []app.Route{d.Route()}, nil
}
