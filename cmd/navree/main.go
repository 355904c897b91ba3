// Command navree makes and runs Navree apps.
//
//	go mod download && go install ./cmd/navree    # in a clone of the framework
//	navree new ../crm --module github.com/acme/crm # a new app in ../crm, built against the clone
//	cd crm && navree make:module contacts         # contacts/module.go, added to the app in main.go
//	navree make:job contacts export                # contacts/export.go, its test, registered in contacts/module.go
//	navree make:listener contacts send_welcome --event contact_created
//	navree make:notification contacts export_ready # by mail and in the inbox
//	navree make:mail contacts welcome              # contacts/mail/welcome.html.tmpl and .txt.tmpl, and WelcomeMail
//	navree make:migration contacts create_contacts # contacts/migrations/0001_create_contacts.*.sql
//	navree make:command contacts import            # contacts/import_command.go: the command contacts:import
//	navree dev                                     # the app's dev (serve, queue:work, schedule:work), rebuilt and restarted as files change
//	navree queue:work                              # any other command builds the app here and runs it: queue:work
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/navree/navree/cmd/navree/internal/scaffold"
	"github.com/navree/navree/config"
	"github.com/urfave/cli/v2"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	var status exitStatus
	var sig killedBy
	switch {
	case errors.As(err, &sig): // the app was; so is navree, for whoever runs it to see
		reraise(sig.Signal)
	case errors.As(err, &status):
		os.Exit(int(status)) // the app, or go build, said why
	case err != nil:
		fmt.Fprintf(os.Stderr, "navree: %v\n", err)
		os.Exit(1)
	}
}

// exitStatus is the error of a process navree ran that exited with this
// status, having said why itself: navree adds nothing, and exits with it.
type exitStatus int

func (s exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(s)) }

// killedBy is the error of an app a signal ended.
type killedBy struct{ os.Signal }

func (k killedBy) Error() string { return "killed by " + k.Signal.String() }

// run runs the navree command line args.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := &cli.App{
		Name:           "navree",
		Usage:          "make Navree apps, and run the one in this folder",
		Writer:         stdout,
		ErrWriter:      stderr,
		ExitErrHandler: func(*cli.Context, error) {},
		// A bad flag is one error naming the flag meant, not the error
		// and then the whole help page.
		OnUsageError: func(c *cli.Context, err error, _ bool) error { return usageError(err, c.App.Flags, "") },
		Flags:        []cli.Flag{&cli.BoolFlag{Name: "version", Usage: "print navree's version"}},
		Commands: []*cli.Command{{
			Name:      "new",
			Usage:     "Write a new app into DIR",
			ArgsUsage: "DIR",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "module", Usage: "the app's module path, such as github.com/acme/crm", DefaultText: "DIR's name"},
				&cli.StringFlag{Name: "framework-path", Usage: "build against this clone of the framework (a replace directive), offline",
					DefaultText: "the clone navree was built from; else the version it was installed at, or the latest"},
				&cli.BoolFlag{Name: "no-git", Usage: "do not run git init in DIR"},
			},
			Action: newAction,
		},
			devCommand(),
			makeCommand("make:module", "Write the module NAME, and add it to the app's modules in modules/modules.go", "NAME",
				"make:module takes the module's name, such as: navree make:module contacts", nil,
				func(c *cli.Context) ([]scaffold.Change, error) { return scaffold.MakeModule(".", c.Args().Get(0)) }),
			makeCommand("make:job", "Write a job of MODULE and its test, and register it in MODULE/module.go", "MODULE NAME",
				"make:job takes a module and a job name, such as: navree make:job contacts export", nil,
				func(c *cli.Context) ([]scaffold.Change, error) {
					return scaffold.MakeJob(".", c.Args().Get(0), c.Args().Get(1))
				}),
			makeCommand("make:listener", "Write a queued listener of MODULE, its test and its event if new, and register it in MODULE/module.go", "MODULE NAME --event EVENT",
				"make:listener takes a module, a listener name and its event, such as: navree make:listener contacts send_welcome --event contact_created",
				[]cli.Flag{&cli.StringFlag{Name: "event", Usage: "the event it listens to: EVENT of MODULE, written when MODULE has no such type, or OTHER.EVENT of the module OTHER"}},
				func(c *cli.Context) ([]scaffold.Change, error) {
					return scaffold.MakeListener(".", c.Args().Get(0), c.Args().Get(1), c.String("event"))
				}),
			makeCommand("make:notification", "Write a notification of MODULE, by mail and in the inbox, and its tests, and register it in MODULE/module.go", "MODULE NAME",
				"make:notification takes a module and a notification name, such as: navree make:notification billing invoice_paid", nil,
				func(c *cli.Context) ([]scaffold.Change, error) {
					return scaffold.MakeNotification(".", c.Args().Get(0), c.Args().Get(1))
				}),
			makeCommand("make:mail", "Write a template mail of MODULE, its function and its test, and give MODULE/mail to the mailer", "MODULE NAME",
				"make:mail takes a module and a mail name, such as: navree make:mail contacts welcome", nil,
				func(c *cli.Context) ([]scaffold.Change, error) {
					return scaffold.MakeMail(".", c.Args().Get(0), c.Args().Get(1))
				}),
			makeCommand("make:migration", "Write a migration of MODULE, up and down, into its migration set, and add the set to MODULE/module.go when new", "MODULE NAME",
				"make:migration takes a module and a migration name, such as: navree make:migration contacts create_contacts", nil,
				func(c *cli.Context) ([]scaffold.Change, error) {
					return scaffold.MakeMigration(".", c.Args().Get(0), c.Args().Get(1))
				}),
			makeCommand("make:command", "Write the command MODULE:NAME of the app and its test, and register it in MODULE/module.go", "MODULE NAME",
				"make:command takes a module and a command name, such as: navree make:command contacts import", nil,
				func(c *cli.Context) ([]scaffold.Change, error) {
					return scaffold.MakeCommand(".", c.Args().Get(0), c.Args().Get(1))
				}),
		},
		// Any other command runs the app in the working directory.
		Action: func(c *cli.Context) error {
			if c.Bool("version") {
				fmt.Fprintln(c.App.Writer, version())
				return nil
			}
			if !c.Args().Present() {
				return cli.ShowAppHelp(c)
			}
			name := c.Args().First()
			if strings.HasPrefix(name, "make:") {
				return unknownMake(c.App, name)
			}
			if _, err := os.Stat("go.mod"); err != nil {
				return fmt.Errorf("%q is not a navree command, and this folder holds no app (no go.mod) to run it: cd into an app, or make one with navree new", name)
			}
			return runApp(c.Context, c.Args().Slice(), c.App.Writer, c.App.ErrWriter)
		},
	}
	for _, cmd := range c.Commands {
		cmd.OnUsageError = func(c *cli.Context, err error, _ bool) error { return usageError(err, c.Command.Flags, c.Command.Name) }
	}
	if len(args) > 0 && (args[0] == "new" || strings.HasPrefix(args[0], "make:")) { // their flags may follow their arguments
		var flags, rest []string
		for i := 1; i < len(args); i++ {
			switch a := args[i]; {
			case valued[strings.TrimLeft(a, "-")] && a[0] == '-' && i+1 < len(args):
				flags, i = append(flags, a, args[i+1]), i+1
			case len(a) > 1 && a[0] == '-':
				flags = append(flags, a)
			default:
				rest = append(rest, a)
			}
		}
		args = append(append([]string{args[0]}, flags...), rest...)
	}
	if err := c.RunContext(ctx, append([]string{"navree"}, args...)); err != nil || !asksHelp(args) || !inApp() {
		return err
	}
	return printAppCommands(ctx, stdout, stderr)
}

// version is navree's version: the module's version it was installed at
// (go install …@v0.1.0), else what go build stamped from the clone's
// version control, else "dev".
func version() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "dev"
}

// unknownMake is the error of the make: command name, which navree does
// not have: it suggests the nearest one.
func unknownMake(c *cli.App, name string) error {
	var makes []string
	for _, cmd := range c.Commands {
		if strings.HasPrefix(cmd.Name, "make:") {
			makes = append(makes, cmd.Name)
		}
	}
	if near, ok := config.Nearest(name, makes); ok {
		return fmt.Errorf("%q is not a navree command: did you mean %s? (navree --help lists them)", name, near)
	}
	return fmt.Errorf("%q is not a navree command: the make: commands are %s", name, strings.Join(makes, ", "))
}

// The errors of Go's flag package, which urfave/cli returns as they are.
var (
	undefinedFlag = regexp.MustCompile(`^flag provided but not defined: -+(.+)$`)
	missingValue  = regexp.MustCompile(`^flag needs an argument: -+(.+)$`)
)

// usageError is the error of a flag that the command line of navree, or
// of its command cmd, got wrong, in the words of the command line: the
// flag as it is written (--version), and the flag meant for one navree
// does not have.
func usageError(err error, flags []cli.Flag, cmd string) error {
	msg := err.Error()
	if m := undefinedFlag.FindStringSubmatch(msg); m != nil {
		names := []string{"help", "h"}
		for _, f := range flags {
			names = append(names, f.Names()...)
		}
		msg = "unknown flag " + dashed(m[1])
		if near, ok := config.Nearest(m[1], names); ok {
			msg += "; did you mean " + dashed(near) + "?"
		}
	} else if m := missingValue.FindStringSubmatch(msg); m != nil {
		msg = "flag " + dashed(m[1]) + " needs a value"
	}
	if cmd == "" {
		return fmt.Errorf("%s (navree --help lists its commands and flags)", msg)
	}
	return fmt.Errorf("%s: %s (navree %s --help lists its flags)", cmd, msg, cmd)
}

// dashed is a flag's name as it is written: -h for a letter, --version.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// valued are the flags of new and make:* that take a value.
var valued = map[string]bool{"module": true, "framework-path": true, "event": true}

// makeCommand is a make:* command: it runs generate, whose arguments
// argsUsage names (usageErr is the error for another count of them),
// writes its changes and, when go.mod lacks a module their imports need,
// runs go mod tidy; or with --dry-run says what it would write.
func makeCommand(name, usage, argsUsage, usageErr string, flags []cli.Flag, generate func(*cli.Context) ([]scaffold.Change, error)) *cli.Command {
	nargs := len(strings.Fields(strings.Split(argsUsage, " --")[0]))
	return &cli.Command{
		Name:      name,
		Usage:     usage,
		ArgsUsage: argsUsage,
		Flags:     append(flags, &cli.BoolFlag{Name: "dry-run", Usage: "say what it would write, and write nothing"}),
		Action: func(c *cli.Context) error {
			if c.NArg() != nargs {
				return errors.New(usageErr)
			}
			changes, err := generate(c)
			if err != nil {
				return err
			}
			verb := map[bool]string{false: "created", true: "edited"}
			if c.Bool("dry-run") {
				verb = map[bool]string{false: "would create", true: "would edit"}
			} else if err := scaffold.Write(".", changes); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			for _, ch := range changes {
				fmt.Fprintf(c.App.Writer, "  %s %s\n", verb[ch.Edited], ch.Path)
			}
			for _, hint := range scaffold.Hints(".", changes) {
				fmt.Fprintln(c.App.Writer, hint)
			}
			if c.Bool("dry-run") {
				return nil
			}
			// The new files may import packages of the framework whose
			// modules go.mod does not list yet. go mod tidy, which reads
			// every module's go.mod (those of the framework's tests too),
			// runs only then: the app builds offline until it is needed.
			if complete(c.Context) {
				return nil
			}
			tidy := exec.CommandContext(c.Context, "go", "mod", "tidy")
			tidy.Stdout, tidy.Stderr = c.App.ErrWriter, c.App.ErrWriter
			if err := tidy.Run(); err != nil {
				return fmt.Errorf("%s: wrote the files above, then go mod tidy failed: %w (run it once the network or module cache has the modules the new imports need)", name, err)
			}
			return nil
		},
	}
}

// complete reports whether the go.mod of the app in the working
// directory provides every package its packages and tests import.
func complete(ctx context.Context) bool {
	return exec.CommandContext(ctx, "go", "list", "-mod=readonly", "-deps", "-test", "./...").Run() == nil
}
