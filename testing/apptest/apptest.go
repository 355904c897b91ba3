package apptest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/knadh/koanf/parsers/toml/v2"
	"github.com/navree/navree/app"
	"github.com/navree/navree/config"
	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
	gotoml "github.com/pelletier/go-toml/v2"
	"go.uber.org/fx"
)

// App is an app built for one test, started, and stopped when the test
// ends.
type App struct {
	t     testing.TB
	app   *app.App
	graph *app.Graph
	logs  *syncBuffer

	handler app.Handler
	srvOnce sync.Once
	srv     *httptest.Server
	mu      sync.Mutex // one command at a time
}

// setting is what an apptest option asks of the app's configuration.
type setting struct {
	values   map[string]any
	database func(t testing.TB, sets ...db.MigrationSet) string // makes a migrated database and returns its URL
}

func settingOption(s *setting) fx.Option {
	return fx.Supply(fx.Annotated{Group: "apptest.settings", Target: s})
}

// TempDatabase gives the app an SQLite database of its own in a temporary
// folder, with every migration set of the app applied. The app needs
// db.Module().
func TempDatabase() fx.Option {
	return fx.Options(settingOption(&setting{database: dbtest.MigratedSQLiteURL}), migrateOnStart)
}

// Postgres gives the app a PostgreSQL schema of its own on the server at
// NAVREE_TEST_POSTGRES_URL, with every migration set of the app applied
// (dbtest.MigratedPostgresURL: the schema is reused, emptied, by a later
// test). Without the variable the test is skipped.
func Postgres() fx.Option {
	return fx.Options(settingOption(&setting{database: dbtest.MigratedPostgresURL}), migrateOnStart)
}

var migrateOnStart = fx.Invoke(func(lc fx.Lifecycle, m *db.Migrator) {
	lc.Append(fx.Hook{OnStart: func(ctx context.Context) error {
		_, err := m.Migrate(ctx)
		return err
	}})
})

// Config sets configuration keys: a map of keys ("queue.workers": 2, or
// nested maps) or a TOML document as a string, whose syntax error names
// its line and column. Later options win.
func Config(values any) fx.Option {
	switch v := values.(type) {
	case map[string]any:
		return settingOption(&setting{values: maps.Clone(v)})
	case string:
		parsed, err := toml.Parser().Unmarshal([]byte(v))
		if err != nil {
			var syntax *gotoml.DecodeError
			if errors.As(err, &syntax) {
				line, col := syntax.Position()
				return fx.Error(fmt.Errorf("apptest.Config: line %d, column %d: %w", line, col, err))
			}
			return fx.Error(fmt.Errorf("apptest.Config: %w", err))
		}
		return settingOption(&setting{values: parsed})
	}
	return fx.Error(fmt.Errorf("apptest.Config: want a map[string]any or a TOML string, not %T", values))
}

// Replace replaces the app's value of v's type with v, for every module:
// apptest.Replace(gateway). The fakes have their own (queuetest's
// fake.Replace() replaces the queue and its Dispatcher both).
func Replace(v any) fx.Option { return fx.Replace(v) }

// Supply provides v as a T, for an app that has no module providing T:
// apptest.Supply[queue.Dispatcher](fake.Dispatcher()).
func Supply[T any](v T) fx.Option {
	return fx.Supply(fx.Annotate(v, fx.As(new(T))))
}

type configIn struct {
	fx.In
	T        testing.TB
	Defs     []config.Definition `group:"config.sections"`
	Settings []*setting          `group:"apptest.settings"`
	Sets     []db.MigrationSet   `group:"db.migrations"`
}

// newConfig is the app's configuration: every section's defaults and the
// apptest settings, and nothing from files or the environment, so tests
// do not depend on the machine they run on. It makes the database of
// [TempDatabase] or [Postgres]: [New] builds the app once, so each New
// has a database of its own, even from the same option value.
func newConfig(p configIn) (*config.Config, error) {
	overrides := map[string]any{}
	for _, s := range p.Settings {
		for k, v := range s.values {
			overrides[k] = v
		}
		if s.database != nil { // once per New: the app is built once
			overrides["database.url"] = s.database(p.T, p.Sets...)
		}
	}
	return config.New(config.Sources{Overrides: overrides}, p.Defs...)
}

// New builds the app of opts (modules, apptest options, fx.Populate…) for
// one test, once, with its configuration from apptest options only, and
// starts it; it stops when the test ends. Each constructor runs once,
// however many commands the test runs. A failure to build or start fails
// the test with the app's error.
func New(t testing.TB, opts ...fx.Option) *App {
	t.Helper()
	a := &App{t: t, logs: &syncBuffer{}}
	a.app = app.New(opts...)
	a.app.Name, a.app.Stderr = "app", a.logs
	graph, err := a.app.Build(
		fx.Supply(fx.Annotate(t, fx.As(new(testing.TB)))),
		fx.Provide(newConfig),
		fx.Populate(&a.handler),
	)
	if err != nil {
		t.Fatalf("apptest: build the app: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := graph.Start(ctx); err != nil {
		t.Fatalf("apptest: start the app: %v", err)
	}
	a.graph = graph
	t.Cleanup(func() {
		if a.srv != nil {
			a.srv.Close()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := graph.Stop(ctx); err != nil {
			t.Errorf("apptest: stop the app: %v", err)
		}
	})
	return a
}

// RunCommand runs a command of the app, such as
// RunCommand("queue:work", "--queue", "sync", "--stop-when-empty"), on the
// app's own services, and returns what it printed.
func (a *App) RunCommand(name string, args ...string) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out syncBuffer
	a.app.Stdout = &out
	err := a.graph.Run(context.Background(), append([]string{name}, args...))
	return out.String(), err
}

// Logs returns everything the app has logged so far.
func (a *App) Logs() string { return a.logs.String() }

// ServeHTTP serves r as serve would: every route of the app behind its
// middleware. Use it with httptest.NewRecorder.
func (a *App) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.handler.ServeHTTP(w, r) }

// HTTP returns a test server running the app's routes, closed when the
// test ends: a.HTTP().Client().Get(a.HTTP().URL + "/contacts").
func (a *App) HTTP() *httptest.Server {
	a.srvOnce.Do(func() { a.srv = httptest.NewServer(a.handler) })
	return a.srv
}

// Clock is a clock that stands still until the test moves it. Give it to
// the app with app.WithClock.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// FixedClock returns a clock standing at t0.
func FixedClock(t0 time.Time) *Clock { return &Clock{now: t0} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock d forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// syncBuffer is a buffer several goroutines write.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
