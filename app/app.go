package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/navree/navree/app/term"
	"github.com/navree/navree/config"
	"github.com/urfave/cli/v2"
	"go.uber.org/dig"
	"go.uber.org/fx"
)

// App is a Navree application: the modules given to [New] and the command
// line that runs them.
type App struct {
	// Name is the program's name in help and errors; the executable's name
	// by default.
	Name string
	// Usage is the one-line description help prints.
	Usage string
	// Version is what --version prints; the main module's version by
	// default.
	Version string
	// Stdout receives what commands print, Stderr errors and logs.
	Stdout, Stderr io.Writer
	// Invocation is how a person runs another command of the app, as
	// this process was run; by default "go run ./cmd/app" when go run
	// built it, else the program as it was typed ("./bin/crm", "crm").
	// Errors and logs that say what to run next start with it, as in
	// run "go run ./cmd/app migrate" first; modules take it from the
	// app's services.
	Invocation Invocation

	options []fx.Option
}

// New returns an app built from fx options: modules such as
// config.Module, db.Module and queue.Module, and the app's own.
func New(opts ...fx.Option) *App {
	return &App{
		Name:       filepath.Base(os.Args[0]),
		Usage:      "a Navree application",
		Version:    buildVersion(),
		Stdout:     os.Stdout,
		Stderr:     os.Stderr,
		Invocation: invokedAs(os.Args[0], readBuildInfo()),
		options:    opts,
	}
}

// Invocation is how a person runs the app's commands: the start of a
// command line, such as "go run ./cmd/app" or "./bin/crm"; see
// [App.Invocation].
type Invocation string

func readBuildInfo() *debug.BuildInfo {
	info, _ := debug.ReadBuildInfo()
	return info
}

// invokedAs is how to run another command of the app the way arg0, this
// process's, was run: arg0 as it was typed (./app, /srv/app/app, crm),
// or, for a binary go run built into a temporary go-build folder, go run
// of the main package (info.Path) from its module's folder: go run
// ./cmd/app, go run . for a main package at the module's root, the
// package at its version for go run pkg@version. A test binary stands
// for the package it tests.
func invokedAs(arg0 string, info *debug.BuildInfo) Invocation {
	if !strings.Contains(filepath.ToSlash(arg0), "/go-build") {
		return Invocation(arg0)
	}
	if info == nil {
		return "go run ."
	}
	pkg := strings.TrimSuffix(info.Path, ".test")
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return Invocation("go run " + pkg + "@" + v)
	}
	if rel, ok := strings.CutPrefix(pkg, info.Main.Path); ok && info.Main.Path != "" && (rel == "" || rel[0] == '/') {
		return Invocation("go run ." + rel)
	}
	return "go run ."
}

func buildVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "dev"
}

// Main runs the command named by the process's arguments, with a context
// that SIGINT or SIGTERM cancels (a second signal ends the process at
// once, unless the command listens for it itself, as queue:work does),
// and exits non-zero when it fails.
//
// A command the signal cut short, before it could stop gracefully (while
// the app was starting, say), ends the process as the signal would have
// by default, so a process manager sees a stop, not a failure.
func (a *App) Main() {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(context.Background())
	var got atomic.Value // the os.Signal that stopped the command
	go func() {
		s := <-signals
		got.Store(s)
		signal.Stop(signals) // from now on a second signal kills the process
		cancel()
	}()
	err := a.Run(ctx, os.Args[1:])
	if err == nil {
		return
	}
	if s, ok := got.Load().(os.Signal); ok && errors.Is(err, context.Canceled) {
		signal.Reset(s)
		if p, perr := os.FindProcess(os.Getpid()); perr == nil && p.Signal(s) == nil {
			time.Sleep(time.Second) // the signal ends the process meanwhile; if not, report below
		}
	}
	fmt.Fprintf(a.Stderr, "%s %v%s\n", term.Paint(a.Stderr, term.Red, a.Name+":"), err, hint(err, a.Invocation))
	os.Exit(1)
}

// hint says what to do next about err, when a person can act on it: a
// table that does not exist (SQLite's "no such table", PostgreSQL's
// SQLSTATE 42P01) needs the migrations, run as run runs the app's
// commands.
func hint(err error, run Invocation) string {
	if msg := err.Error(); strings.Contains(msg, "no such table") || strings.Contains(msg, "SQLSTATE 42P01") {
		return fmt.Sprintf(" (a table is missing: run %q first)", string(run)+" migrate")
	}
	return ""
}

// base is what every app provides before its own modules; the logger
// writes to stderr.
func (a *App) base(stderr io.Writer) fx.Option {
	return fx.Options(
		fx.NopLogger,
		fx.Supply(a.Invocation),
		fx.Provide(func() Clock { return SystemClock{} }),
		fx.Provide(func(p loggerIn) *slog.Logger { return newLogger(stderr, p.Config) }),
		config.Section("http", HTTPConfig{Addr: "127.0.0.1:8080", ShutdownTimeoutMs: 10_000}),
		config.Section("log", LogConfig{Level: "info", Format: "text"}),
		fx.Provide(a.newHandler),
		Commands(a.serveCommand(), a.devCommand()),
		fx.Options(a.options...),
	)
}

type commandsIn struct {
	fx.In
	Commands []Command `group:"app.commands"`
}

// Run runs the command line args (the arguments after the program's name)
// and returns the command's error. ctx is the command's context: cancel it
// to stop the command.
//
// Only the command that runs has its services built and started, once:
// listing the commands (help, --version, an unknown command's error)
// builds no service at all.
func (a *App) Run(ctx context.Context, args []string) error {
	cmds, err := a.commands()
	if err != nil {
		return err
	}
	return a.runLine(ctx, cmds, a.runCommand, args)
}

// errListed stops the graph of [App.commands] once it has the commands.
var errListed = errors.New("app: the commands are listed")

// commands lists the app's commands, with extra options, and checks them,
// building no service. Commands are values supplied to a group, so reading
// the group calls no constructor; the invoke that reads it belongs to the
// first module of the graph, so it runs before every other invoke (fx runs
// a graph's modules' invokes in order, before its own), and it stops the
// graph: no fx.Invoke or fx.Populate of the app's runs.
func (a *App) commands(extra ...fx.Option) ([]Command, error) {
	var found commandsIn
	list := fx.Module("app.commands", fx.Invoke(func(p commandsIn) error {
		found = p
		return errListed
	}))
	if err := fx.New(list, a.base(a.Stderr), fx.Options(extra...)).Err(); !errors.Is(err, errListed) {
		return nil, bootError(err)
	}
	seen := map[string]bool{}
	for _, cmd := range found.Commands {
		if seen[cmd.Name] {
			return nil, fmt.Errorf("command %s is registered twice", cmd.Name)
		}
		seen[cmd.Name] = true
		if err := cmd.check(); err != nil {
			return nil, err
		}
	}
	return found.Commands, nil
}

// cli is the command line of cmds, each run by run.
func (a *App) cli(cmds []Command, run func(*cli.Context, Command) error) *cli.App {
	cliApp := &cli.App{
		Name:    a.Name,
		Usage:   a.Usage,
		Version: a.Version,
		Writer:  a.Stdout,
		// Logs and errors, below the status line of a long command.
		ErrWriter:      term.NewWriter(a.Stderr),
		ExitErrHandler: func(*cli.Context, error) {}, // Run returns errors; Main exits
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return fmt.Errorf("%s (%s --help lists the commands and flags)", usageError(err, c.App.Flags), a.Name)
		},
		// urfave/cli's own help and version flags are package variables
		// that parsing writes to: two apps of one process (tests run in
		// parallel) would race on them. Each command line has its own.
		HideHelp:    true,
		HideVersion: true,
		Flags:       []cli.Flag{helpFlag(), versionFlag()},
		// The help shows the version all the same.
		CustomAppHelpTemplate: strings.ReplaceAll(cli.AppHelpTemplate, "{{if not .HideVersion}}", "{{if true}}"),
	}
	// No command, a prefix alone (queue), or a command the app does not have.
	cliApp.Action = func(c *cli.Context) error {
		if !c.Args().Present() {
			return cli.ShowAppHelp(c)
		}
		if a.listPrefix(c.Args().First(), cmds) {
			return nil
		}
		return a.unknownCommand(c.Args().First(), cmds)
	}
	// Help lists the commands by name, grouped by what comes before their
	// colon (queue:work under queue): fx gives them in no set order.
	sorted := slices.Clone(cmds)
	slices.SortFunc(sorted, func(x, y Command) int { return strings.Compare(x.Name, y.Name) })
	for _, cmd := range sorted {
		category, _, grouped := strings.Cut(cmd.Name, ":")
		if !grouped {
			category = ""
		}
		cliApp.Commands = append(cliApp.Commands, &cli.Command{
			Name:        cmd.Name,
			Usage:       cmd.Usage,
			ArgsUsage:   cmd.ArgsUsage,
			Description: cmd.Description,
			Category:    category,
			Flags:       append(copyFlags(cmd.Flags), helpFlag()),
			HideHelp:    true, // its own help flag, above
			Action:      func(c *cli.Context) error { return run(c, cmd) },
			// A bad flag is one error, naming the flag as it is written,
			// not the error and then the whole help page.
			OnUsageError: func(c *cli.Context, err error, _ bool) error {
				return fmt.Errorf("%s: %s (%s %s --help lists its flags)", cmd.Name, usageError(err, c.Command.Flags), a.Name, cmd.Name)
			},
		})
	}
	cliApp.Commands = append(cliApp.Commands, helpCommand())
	return cliApp
}

// helpFlag, versionFlag and helpCommand are urfave/cli's own, made anew
// for each command line (see [App.cli]).
func helpFlag() cli.Flag {
	return &cli.BoolFlag{Name: "help", Aliases: []string{"h"}, Usage: "show help", DisableDefaultText: true}
}

func versionFlag() cli.Flag {
	return &cli.BoolFlag{Name: "version", Aliases: []string{"v"}, Usage: "print the version", DisableDefaultText: true}
}

func helpCommand() *cli.Command {
	return &cli.Command{
		Name:      "help",
		Aliases:   []string{"h"},
		Usage:     "Shows a list of commands or help for one command",
		ArgsUsage: "[command]",
		HideHelp:  true,
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return cli.ShowCommandHelp(c, c.Args().First())
			}
			return cli.ShowAppHelp(c)
		},
	}
}

// copyFlags copies each flag of flags, so that parsing a command line,
// which writes to its flags, writes to its own: a module's commands, in
// a package variable, are shared by every app of the process.
func copyFlags(flags []cli.Flag) []cli.Flag {
	out := make([]cli.Flag, len(flags))
	for i, f := range flags {
		v := reflect.ValueOf(f)
		if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
			out[i] = f
			continue
		}
		c := reflect.New(v.Elem().Type())
		c.Elem().Set(v.Elem())
		out[i] = c.Interface().(cli.Flag)
	}
	return out
}

// bootCheck makes every command validate the configuration, even one that
// needs no section of it: building the *config.Config fails the boot on an
// invalid value or an unknown key or section.
type bootCheck struct {
	fx.In
	Config *config.Config `optional:"true"`
}

func checkBoot(bootCheck) {}

// LogConfig is the [log] section of the configuration.
type LogConfig struct {
	// Level is the lowest level logged: debug, info (the default), warn
	// or error.
	Level string `koanf:"level" validate:"oneof=debug info warn error"`
	// Format is text (the default, logfmt) or json.
	Format string `koanf:"format" validate:"oneof=text json"`
}

type loggerIn struct {
	fx.In
	Config LogConfig `optional:"true"` // absent without config.Module
}

// newLogger is the app's logger, writing to w as cfg says.
func newLogger(w io.Writer, cfg LogConfig) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.Level)) // validated; "" is info
	opts := &slog.HandlerOptions{Level: level}
	if cfg.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// runCommand builds the app with the services cmd's Action uses, starts
// it, runs the action and stops the app.
func (a *App) runCommand(c *cli.Context, cmd Command) (err error) {
	deps, run := cmd.Action.bind()
	fxApp := fx.New(a.base(c.App.ErrWriter), fx.Invoke(checkBoot), deps)
	if err := fxApp.Err(); err != nil {
		return bootError(err)
	}
	startCtx, cancel := context.WithTimeout(c.Context, fxApp.StartTimeout())
	defer cancel()
	if err := fxApp.Start(startCtx); err != nil {
		return bootError(err)
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(c.Context), fxApp.StopTimeout())
		defer cancel()
		if stopErr := fxApp.Stop(stopCtx); stopErr != nil && err == nil {
			err = fmt.Errorf("stop: %w", stopErr)
		}
	}()
	return run(c)
}

// bootError trims fx's account of how it got to a failing constructor down
// to the error the constructor returned. A type the app's modules do not
// provide, but a module of the framework does, gets the module to add.
func bootError(err error) error {
	root := dig.RootCause(err)
	if root == nil || errors.Is(root, context.Canceled) {
		return err
	}
	if modules := providers(root.Error()); len(modules) > 0 {
		return fmt.Errorf("%w (add %s to the app's modules)", root, andList(modules))
	}
	return root
}

// frameworkModule returns the module of the framework's package pkg,
// which provides its types (*events.Bus, queue.Dispatcher…).
func frameworkModule(pkg string) (string, bool) {
	switch pkg {
	case "config":
		return "config.Module(config.Defaults())", true
	case "db", "queue", "dashboard", "mail", "events", "notify", "schedule":
		return pkg + ".Module()", true
	}
	return "", false
}

// providers returns the framework modules that provide the types of
// dig's "missing type: *events.Bus" or "missing types: *events.Bus;
// *notify.Notifier (did you mean …?)", in order, each once.
func providers(msg string) []string {
	list, ok := strings.CutPrefix(msg, "missing type: ")
	if !ok {
		if list, ok = strings.CutPrefix(msg, "missing types: "); !ok {
			return nil
		}
	}
	var modules []string
	for item := range strings.SplitSeq(list, "; ") {
		typ, _, _ := strings.Cut(item, " ")
		typ = strings.TrimLeft(typ, "*[]")
		if strings.ContainsAny(typ, "[]") { // named, in a group, or generic: no module provides it
			continue
		}
		pkg, _, _ := strings.Cut(typ, ".")
		if m, ok := frameworkModule(pkg); ok && !slices.Contains(modules, m) {
			modules = append(modules, m)
		}
	}
	return modules
}

// andList joins items as a sentence does: "a", "a and b", "a, b and c".
func andList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
