package app_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/config"
	"github.com/navree/navree/db"
	"github.com/urfave/cli/v2"
	"go.uber.org/fx"
)

// newApp returns an app that prints into out, configured by overrides
// only (no files, no process environment).
func newApp(out io.Writer, overrides map[string]any, opts ...fx.Option) *app.App {
	a := app.New(append([]fx.Option{config.Module(config.Sources{Overrides: overrides})}, opts...)...)
	a.Name, a.Version = "crm", "1.2.3"
	a.Stdout, a.Stderr = out, out
	return a
}

type service struct{ name string }

// tracked provides a *service and records its construction and lifecycle.
func tracked(name string, events *[]string) fx.Option {
	return fx.Provide(func(lc fx.Lifecycle) *service {
		*events = append(*events, "build "+name)
		lc.Append(fx.Hook{
			OnStart: func(context.Context) error { *events = append(*events, "start "+name); return nil },
			OnStop:  func(context.Context) error { *events = append(*events, "stop "+name); return nil },
		})
		return &service{name}
	})
}

// counted is a module whose *service counts its builds: a command needs
// it, and so does an fx.Populate, which runs whenever the app is built.
func counted(builds *int, events *[]string) fx.Option {
	var populated *service
	return fx.Options(
		db.Module(),
		fx.Provide(func() *service { *builds++; return &service{"export"} }),
		fx.Populate(&populated),
		app.Commands(app.Command{Name: "export", Usage: "Export the contacts", Action: app.Uses(func(c *cli.Context, s *service) error {
			*events = append(*events, "run "+s.name)
			return nil
		})}),
	)
}

func TestListingTheCommandsBuildsNothing(t *testing.T) {
	var builds int
	var events []string
	unreachable := map[string]any{"database.url": "postgres://app:hunter2@203.0.113.1:5432/crm?connect_timeout=1"}
	tests := []struct {
		args    []string
		want    []string
		wantErr string
	}{
		{args: []string{"--help"}, want: []string{"crm - a Navree application", "export", "Export the contacts", "migrate", "migrate:status", "migrate:rollback", "serve"}},
		{args: []string{"help"}, want: []string{"migrate:rollback"}},
		{args: []string{}, want: []string{"COMMANDS:"}},
		{args: []string{"migrate", "--help"}, want: []string{"crm migrate - Apply every pending migration"}},
		{args: []string{"help", "export"}, want: []string{"crm export - Export the contacts"}},
		{args: []string{"--version"}, want: []string{"1.2.3"}},
		{args: []string{"exprot"}, wantErr: `unknown command "exprot"; did you mean export? (crm --help lists the commands)`},
		{args: []string{"mgrate:status"}, wantErr: `unknown command "mgrate:status"; did you mean migrate:status? (crm --help lists the commands)`},
		{args: []string{"deploy"}, wantErr: `unknown command "deploy" (crm --help lists the commands)`},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		err := newApp(&out, unreachable, counted(&builds, &events)).Run(context.Background(), tt.args)
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr) {
			t.Fatalf("%v: error %v, want %q", tt.args, err, tt.wantErr)
		}
		for _, want := range tt.want {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%v printed\n%s\nwant it to contain %q", tt.args, out.String(), want)
			}
		}
		if builds != 0 || len(events) != 0 {
			t.Fatalf("%v built the service %d time(s) and ran %v, want nothing built", tt.args, builds, events)
		}
	}
}

func TestFlagsMayFollowArguments(t *testing.T) {
	var got []string
	cmd := app.Command{Name: "export", ArgsUsage: "COMPANY...",
		Flags: []cli.Flag{&cli.StringFlag{Name: "format", Aliases: []string{"f"}}, &cli.BoolFlag{Name: "zip"}},
		Action: app.ActionFunc(func(c *cli.Context) error {
			got = append([]string{c.String("format"), fmt.Sprint(c.Bool("zip"))}, c.Args().Slice()...)
			return nil
		})}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"export", "acme", "--format", "csv"}, "csv false acme"},
		{[]string{"export", "acme", "-f=json", "--zip", "globex"}, "json true acme globex"},
		{[]string{"export", "--format", "csv", "acme"}, "csv false acme"},
		{[]string{"export", "acme", "--zip", "--", "--format", "x"}, " true acme --format x"},
	}
	for _, tt := range tests {
		got = nil
		if err := newApp(io.Discard, nil, app.Commands(cmd)).Run(context.Background(), tt.args); err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		if strings.Join(got, " ") != tt.want {
			t.Errorf("%v: got %q, want %q", tt.args, strings.Join(got, " "), tt.want)
		}
	}
}

// sharedModule is a module in a package variable, as apps write them:
// every app of a process that has it shares its commands and their flags.
var sharedModule = app.Commands(app.Command{Name: "export",
	Flags: []cli.Flag{&cli.StringFlag{Name: "format", Value: "csv"}, &cli.BoolFlag{Name: "zip"}},
	Action: app.ActionFunc(func(c *cli.Context) error {
		fmt.Fprintf(c.App.Writer, "%s %v %s", c.String("format"), c.Bool("zip"), c.Args().First())
		return nil
	})})

// TestAppsRunCommandLinesAtOnce: apps of one process (tests run in
// parallel) run command lines at once, each reading its own flags: under
// -race, parsing wrote to flags they shared (urfave/cli's help and
// version flags, and the module's own).
func TestAppsRunCommandLinesAtOnce(t *testing.T) {
	for i := range 8 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			for _, tt := range []struct {
				args []string
				want string // in what it printed
			}{
				{[]string{"export", "acme", "--format", fmt.Sprint("f", i)}, fmt.Sprintf("f%d false acme", i)},
				{[]string{"export", "--zip", "globex"}, "csv true globex"},
				{[]string{"--help"}, "--help, -h"},
				{[]string{"export", "--help"}, "--format value"},
				{[]string{"help", "export"}, "--format value"},
			} {
				args, want := tt.args, tt.want
				var out bytes.Buffer
				if err := newApp(&out, nil, sharedModule).Run(context.Background(), args); err != nil {
					t.Fatalf("%v: %v", args, err)
				}
				if !strings.Contains(out.String(), want) {
					t.Errorf("%v printed %q, want %q in it", args, out.String(), want)
				}
			}
		})
	}
}

func TestEachCommandRunBuildsOnce(t *testing.T) {
	var builds int
	var events []string
	for i := 1; i <= 3; i++ {
		if err := newApp(io.Discard, nil, counted(&builds, &events)).Run(context.Background(), []string{"export"}); err != nil {
			t.Fatal(err)
		}
		if builds != i || len(events) != i {
			t.Fatalf("after %d runs of export: %d build(s), ran %v; want one build per run", i, builds, events)
		}
	}
}

func TestUsesAnFxInStruct(t *testing.T) {
	type other struct{ name string }
	type exportIn struct {
		fx.In
		Service *service
		Other   *other
		Clock   app.Clock
	}
	var got []string
	var events []string
	a := newApp(io.Discard, nil,
		tracked("export", &events),
		fx.Provide(func() *other { return &other{"other"} }),
		app.Commands(app.Command{Name: "export", Action: app.Uses(func(c *cli.Context, p exportIn) error {
			got = append(got, p.Service.name, p.Other.name, fmt.Sprintf("%T", p.Clock))
			return nil
		})}),
	)
	if err := a.Run(context.Background(), []string{"export"}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[export other app.SystemClock]" {
		t.Fatalf("the action got %v", got)
	}
}

func TestACommandBuildsAndStartsOnlyWhatItNeeds(t *testing.T) {
	var events []string
	type other struct{}
	a := newApp(io.Discard, nil,
		tracked("export", &events),
		fx.Provide(func() *other { events = append(events, "build other"); return &other{} }),
		app.Commands(
			app.Command{Name: "export", Action: app.Uses(func(c *cli.Context, s *service) error {
				events = append(events, "run "+s.name)
				return nil
			})},
			app.Command{Name: "other", Action: app.Uses(func(c *cli.Context, o *other) error { return nil })},
			app.Command{Name: "noop", Action: app.ActionFunc(func(c *cli.Context) error {
				events = append(events, "run noop")
				return nil
			})},
		),
	)
	if err := a.Run(context.Background(), []string{"export"}); err != nil {
		t.Fatal(err)
	}
	want := []string{"build export", "start export", "run export", "stop export"}
	if fmt.Sprint(events) != fmt.Sprint(want) {
		t.Fatalf("events %v, want %v", events, want)
	}
	events = nil
	if err := a.Run(context.Background(), []string{"noop"}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(events) != "[run noop]" {
		t.Fatalf("noop: events %v, want only the run", events)
	}
}

func TestAFailingCommandStillStopsTheApp(t *testing.T) {
	var events []string
	boom := errors.New("export failed")
	a := newApp(io.Discard, nil, tracked("export", &events),
		app.Commands(app.Command{Name: "export", Action: app.Uses(func(c *cli.Context, s *service) error { return boom })}))
	if err := a.Run(context.Background(), []string{"export"}); !errors.Is(err, boom) {
		t.Fatalf("error = %v, want the command's", err)
	}
	if events[len(events)-1] != "stop export" {
		t.Fatalf("events %v, want the app stopped", events)
	}
}

func TestInvalidConfigFailsTheBootButNotHelp(t *testing.T) {
	nothing := app.Commands(app.Command{Name: "noop", Action: app.ActionFunc(func(c *cli.Context) error { return nil })})
	a := newApp(io.Discard, map[string]any{"http.shutdown_timeout_ms": -1}, nothing)
	err := a.Run(context.Background(), []string{"noop"})
	want := `config: invalid value for http.shutdown_timeout_ms: "-1" (from overrides); allowed: at least 0`
	if !errors.Is(err, config.ErrInvalid) || err.Error() != want {
		t.Fatalf("error = %v, want %s", err, want)
	}
	if err := a.Run(context.Background(), []string{"--help"}); err != nil {
		t.Fatalf("--help with a bad config: %v", err)
	}
}

// TestDatabasePasswordsNeverPrinted runs migrate with APP_DATABASE__URL
// holding a password in each form PostgreSQL takes: a URL pgx cannot use
// and a key=value string fail with the URL shown without its password,
// an unreachable server with its address alone, and nothing printed
// shows the password either.
func TestDatabasePasswordsNeverPrinted(t *testing.T) {
	const (
		allowed = "; allowed: sqlite://PATH or postgres://USER@HOST:PORT/DATABASE"
		refused = "cannot connect to PostgreSQL at 127.0.0.1:1: connection refused (is the server running?)"
	)
	tests := []struct{ give, want string }{
		{"postgres://bob:S3cret@127.0.0.1:1/crm", refused},
		{"postgres://bob@127.0.0.1:1/crm?password=S3cret", refused},
		{"postgres://bob@127.0.0.1:1/crm?Password=S3cret&sslpassword=S3cret", refused},
		{"postgres://bob:p%40ss%3Aw%2Frd%3F%23%25@127.0.0.1:1/crm", refused},
		{"postgres://bob:p@ss:w/rd?#%@127.0.0.1:1/crm", `config: invalid value for database.url: "postgres://bob:xxxxx@127.0.0.1:1/crm" (from env APP_DATABASE__URL)` +
			allowed + " (percent-encode each @ and / of the user name and password, as %40 and %2F)"},
		{"postgres://bob:S3cret@127.0.0.1:1x/crm", `config: invalid value for database.url: "postgres://bob:xxxxx@127.0.0.1:1x/crm" (from env APP_DATABASE__URL)` +
			allowed + " (the port must be a number from 1 to 65535)"},
		{`host=127.0.0.1 port=1 user=bob password='S3cret \'x'`,
			`config: invalid value for database.url: "host=127.0.0.1 port=1 user=bob password=xxxxx" (from env APP_DATABASE__URL)` +
				allowed + " (a key=value connection string is not accepted: write it as a postgres:// URL)"},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			var out bytes.Buffer
			a := app.New(config.Module(config.Sources{Environ: []string{"APP_DATABASE__URL=" + tt.give}}), db.Module())
			a.Stdout, a.Stderr = &out, &out
			err := a.Run(context.Background(), []string{"migrate"})
			if err == nil || err.Error() != tt.want {
				t.Fatalf("migrate error:\n got %v\nwant %s", err, tt.want)
			}
			for _, secret := range []string{"S3cret", "p%40ss", "p@ss", "w/rd"} {
				if strings.Contains(out.String()+err.Error(), secret) {
					t.Errorf("migrate shows %q: printed %q, error %v", secret, out.String(), err)
				}
			}
		})
	}
}

func TestUnknownSectionFailsTheBootButNotHelp(t *testing.T) {
	nothing := app.Commands(app.Command{Name: "noop", Action: app.ActionFunc(func(c *cli.Context) error { return nil })})
	a := app.New(config.Module(config.Sources{Environ: []string{"APP_HTTPS__ADDR=0.0.0.0:443"}}), nothing)
	a.Stdout, a.Stderr = io.Discard, io.Discard
	err := a.Run(context.Background(), []string{"noop"})
	want := `config: unknown section [https] (from env APP_HTTPS__ADDR): did you mean [http]?`
	if !errors.Is(err, config.ErrInvalid) || err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %s", err, want)
	}
	if err := a.Run(context.Background(), []string{"--help"}); err != nil {
		t.Fatalf("--help with a bad config: %v", err)
	}
}

func TestBadCommandsAreBootErrors(t *testing.T) {
	tests := []struct {
		give fx.Option
		want string
	}{
		{app.Commands(app.Command{Name: "x"}), "command x has no Action"},
		{app.Commands(app.Command{Name: "x", Action: app.ActionFunc(nil)}), "command x has no Action"},
		{app.Commands(app.Command{Name: "x", Action: app.Uses[*service](nil)}), "command x has no Action"},
		{app.Commands(app.Command{Action: app.ActionFunc(func(*cli.Context) error { return nil })}), "a command has no name"},
		{app.Commands(app.Command{Name: "serve", Action: app.ActionFunc(func(*cli.Context) error { return nil })}), "command serve is registered twice"},
	}
	for _, tt := range tests {
		err := newApp(io.Discard, nil, tt.give).Run(context.Background(), []string{"--help"})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("error = %v, want %q", err, tt.want)
		}
	}
}

func TestMissingServiceNamesIt(t *testing.T) {
	type missing struct{}
	a := newApp(io.Discard, nil, app.Commands(app.Command{Name: "x", Action: app.Uses(func(c *cli.Context, m *missing) error { return nil })}))
	err := a.Run(context.Background(), []string{"x"})
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("error = %v, want it to name the missing type", err)
	}
}

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

func TestClock(t *testing.T) {
	var got app.Clock
	cmd := app.Commands(app.Command{Name: "now", Action: app.Uses(func(c *cli.Context, clock app.Clock) error { got = clock; return nil })})
	if err := newApp(io.Discard, nil, cmd).Run(context.Background(), []string{"now"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := got.(app.SystemClock); !ok {
		t.Fatalf("default clock is %T, want app.SystemClock", got)
	}
	t0 := time.Date(2026, 10, 26, 8, 14, 2, 0, time.UTC)
	if err := newApp(io.Discard, nil, cmd, app.WithClock(fixedClock{t0})).Run(context.Background(), []string{"now"}); err != nil {
		t.Fatal(err)
	}
	if !got.Now().Equal(t0) {
		t.Fatalf("WithClock: Now() = %v, want %v", got.Now(), t0)
	}
}

// lines streams what an app prints, line by line.
func lines(t *testing.T) (io.Writer, <-chan string) {
	r, w := io.Pipe()
	ch := make(chan string, 100)
	go func() {
		defer close(ch)
		s := bufio.NewScanner(r)
		for s.Scan() {
			ch <- s.Text()
		}
	}()
	t.Cleanup(func() { w.Close() })
	return w, ch
}

func TestServeRunsRoutesInMiddlewareAndStopsGracefully(t *testing.T) {
	inFlight := make(chan struct{})
	release := make(chan struct{})
	routes := app.Routes(
		app.Route{Pattern: "GET /hello/{name}", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "hello %s via %s", r.PathValue("name"), r.Header.Get("X-Trail"))
		})},
		app.Route{Pattern: "GET /slow", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(inFlight)
			<-release
			io.WriteString(w, "finished")
		})},
	)
	mark := func(name string) func(http.Handler) http.Handler {
		return func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				r.Header.Set("X-Trail", r.Header.Get("X-Trail")+name)
				next.ServeHTTP(w, r)
			})
		}
	}
	middleware := fx.Supply(
		fx.Annotated{Group: "app.middleware", Target: app.Middleware{Order: 2, Wrap: mark("b")}},
		fx.Annotated{Group: "app.middleware", Target: app.Middleware{Order: 1, Wrap: mark("a")}},
	)
	out, printed := lines(t)
	a := newApp(out, map[string]any{"http.addr": "127.0.0.1:0"}, routes, middleware)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, []string{"serve"}) }()

	first := <-printed
	base, ok := strings.CutPrefix(first, "Serving HTTP on ")
	if !ok {
		t.Fatalf("serve printed %q", first)
	}
	base = strings.TrimSuffix(base, " (Ctrl-C to stop)")
	resp, err := http.Get(base + "/hello/ada")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "hello ada via ab" {
		t.Fatalf("GET /hello/ada = %q, want the route behind middleware a then b", body)
	}

	slow := make(chan string, 1)
	go func() {
		resp, err := http.Get(base + "/slow")
		if err != nil {
			slow <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		slow <- string(b)
	}()
	<-inFlight
	stop() // as SIGTERM would
	close(release)
	if got := <-slow; got != "finished" {
		t.Fatalf("the request in flight at shutdown got %q", got)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	last := <-printed
	for strings.HasPrefix(last, "Welcome page (development): ") || strings.HasPrefix(last, "  http://") {
		last = <-printed // the welcome page and the app's pages
	}
	if last != "Stopped serving HTTP." {
		t.Fatalf("serve printed %q at the end", last)
	}
}

func TestServeReportsABadRouteAndABusyAddress(t *testing.T) {
	h := http.NotFoundHandler()
	dup := app.Routes(app.Route{Pattern: "GET /x", Handler: h}, app.Route{Pattern: "GET /x", Handler: h})
	err := newApp(io.Discard, map[string]any{"http.addr": "127.0.0.1:0"}, dup).Run(context.Background(), []string{"serve"})
	if err == nil || !strings.Contains(err.Error(), `route "GET /x"`) {
		t.Fatalf("error = %v, want the duplicate route named", err)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	err = newApp(io.Discard, map[string]any{"http.addr": busy.Addr().String()}).Run(context.Background(), []string{"serve"})
	if err == nil || !strings.Contains(err.Error(), "serve: listen on "+busy.Addr().String()+" (http.addr)") {
		t.Fatalf("error = %v, want the address named", err)
	}
}

const childEnv = "NAVREE_APP_TEST_CHILD"

// TestMain lets the tests run an app as a real process: the test binary
// started with NAVREE_APP_TEST_CHILD=1 is the app of childApp, its
// arguments the command line.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		childApp().Main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type queueSection struct {
	Driver string `koanf:"driver" validate:"oneof=database memory"`
}

// childApp is the app the tests run as a process: wait and fail, and
// stand-ins for queue:work and schedule:work that say they are ready
// (their pid, and the queue driver they got), then wait to be stopped.
// DEV_TEST_FAIL=NAME makes NAME fail once ready, saying how to run it
// again as the app was run; DEV_TEST_HANG=1 makes
// them never stop gracefully.
// partIn is what childApp's stand-ins use: the queue section, and how the
// user runs the app's commands, which a failure names.
type partIn struct {
	fx.In
	Queue queueSection
	Run   app.Invocation
}

func childApp() *app.App {
	part := func(name string) app.Command {
		return app.Command{Name: name, Action: app.Uses(func(c *cli.Context, p partIn) error {
			fmt.Fprintf(c.App.Writer, "ready pid=%d driver=%s\n", os.Getpid(), p.Queue.Driver)
			if os.Getenv("DEV_TEST_FAIL") == name {
				return fmt.Errorf("it broke (run %q to retry)", string(p.Run)+" "+name)
			}
			<-c.Context.Done()
			fmt.Fprintln(c.App.Writer, "stopping")
			if os.Getenv("DEV_TEST_HANG") != "" {
				time.Sleep(time.Hour)
			}
			fmt.Fprintln(c.App.Writer, "stopped")
			return nil
		})}
	}
	a := app.New(
		config.Module(config.Sources{Env: os.Getenv("APP_ENV"), Environ: os.Environ()}),
		config.Section("queue", queueSection{Driver: "database"}),
		app.Commands(
			app.Command{Name: "wait", Action: app.ActionFunc(func(c *cli.Context) error {
				fmt.Fprintln(c.App.Writer, "ready")
				<-c.Context.Done()
				fmt.Fprintln(c.App.Writer, "cancelled")
				return nil
			})},
			app.Command{Name: "fail", Action: app.ActionFunc(func(c *cli.Context) error { return errors.New("it broke") })},
			part("queue:work"),
			part("schedule:work"),
		),
	)
	a.Name = "crm"
	return a
}

func child(t *testing.T, command string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(os.Args[0], command)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, bufio.NewReader(stdout)
}

func TestSignalsCancelTheCommand(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd, out := child(t, "wait")
			if line, _ := out.ReadString('\n'); line != "ready\n" {
				t.Fatalf("child printed %q", line)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			rest, _ := io.ReadAll(out)
			if err := cmd.Wait(); err != nil {
				t.Fatalf("child exited with %v after %s", err, sig)
			}
			if string(rest) != "cancelled\n" {
				t.Fatalf("after %s the child printed %q", sig, rest)
			}
		})
	}
}

func TestMainExitsNonZeroOnError(t *testing.T) {
	cmd := exec.Command(os.Args[0], "fail")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("exit = %v, want status 1", err)
	}
	if string(out) != "crm: it broke\n" {
		t.Fatalf("printed %q", out)
	}
}

// TestTheCommandLineAsANewcomerMeetsIt: help lists the commands in one
// order, grouped by their prefix; help of an unknown command and a bad
// flag value are one error each, naming what was wrong.
func TestTheCommandLineAsANewcomerMeetsIt(t *testing.T) {
	noop := app.ActionFunc(func(*cli.Context) error { return nil })
	cmds := app.Commands(
		app.Command{Name: "queue:work", Usage: "Run jobs", Action: noop, Flags: []cli.Flag{&cli.IntFlag{Name: "workers", DefaultText: "queue.workers"}}},
		app.Command{Name: "contacts:export", Usage: "Export", Action: noop},
		app.Command{Name: "queue:failed", Usage: "List failed jobs", Action: noop},
	)
	var first string
	for i := range 5 {
		var out bytes.Buffer
		if err := newApp(&out, nil, cmds).Run(context.Background(), []string{"--help"}); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = out.String()
		} else if out.String() != first {
			t.Fatalf("--help changed between runs:\n%s\n---\n%s", first, out.String())
		}
	}
	if !strings.Contains(first, "   contacts:\n     contacts:export  Export\n   queue:\n     queue:failed  List failed jobs\n     queue:work    Run jobs\n") {
		t.Fatalf("--help does not group the commands by prefix:\n%s", first)
	}
	var out bytes.Buffer
	err := newApp(&out, nil, cmds).Run(context.Background(), []string{"help", "queue:wrok"})
	if err == nil || err.Error() != `unknown command "queue:wrok"; did you mean queue:work? (crm --help lists the commands)` {
		t.Fatalf("help of an unknown command: %v", err)
	}
	out.Reset()
	err = newApp(&out, nil, cmds).Run(context.Background(), []string{"queue:work", "--workers", "many"})
	if err == nil || err.Error() != `queue:work: invalid value "many" for flag --workers: want a whole number (crm queue:work --help lists its flags)` || out.Len() != 0 {
		t.Fatalf("a bad flag value: %v, and printed %q", err, out.String())
	}
	out.Reset()
	if err := newApp(&out, nil, cmds).Run(context.Background(), []string{"queue:work", "--help"}); err != nil ||
		!strings.Contains(out.String(), "--workers value  (default: queue.workers)") {
		t.Fatalf("queue:work --help: %v\n%s", err, out.String())
	}
}
