// Command navree makes and runs Navree apps.
//
//	go install github.com/navree/navree/cmd/navree@latest
//	navree new crm --module github.com/acme/crm   # a new app in ./crm
//	cd crm && navree make:module contacts         # contacts/module.go, added to the app in main.go
//	navree make:job contacts export                # contacts/export.go, its test, registered in contacts/module.go
//	navree make:listener contacts send_welcome --event contact_created
//	navree make:notification contacts export_ready # by mail and in the inbox
//	navree make:mail contacts welcome              # contacts/mail/welcome.html.tmpl and .txt.tmpl, and WelcomeMail
//	navree queue:work                              # any other command runs the app here: go run . queue:work
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/navree/navree/cmd/navree/scaffold"
	"github.com/urfave/cli/v2"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		os.Exit(exit.ExitCode()) // the app said why
	case err != nil:
		fmt.Fprintf(os.Stderr, "navree: %v\n", err)
		os.Exit(1)
	}
}

// run runs the navree command line args.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := &cli.App{
		Name:           "navree",
		Usage:          "make Navree apps, and run the one in this folder",
		Writer:         stdout,
		ErrWriter:      stderr,
		ExitErrHandler: func(*cli.Context, error) {},
		Commands: []*cli.Command{{
			Name:      "new",
			Usage:     "Write a new app into DIR",
			ArgsUsage: "DIR",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "module", Usage: "the app's module path, such as github.com/acme/crm", DefaultText: "DIR's name"},
				&cli.StringFlag{Name: "framework-path", Usage: "build against this checkout of the framework (a replace directive; works offline)"},
			},
			Action: func(c *cli.Context) error {
				if c.NArg() != 1 {
					return errors.New("new takes one argument, the folder to write the app into: navree new crm")
				}
				dir := c.Args().First()
				module := c.String("module")
				if module == "" {
					module = filepath.Base(filepath.Clean(dir))
				}
				files, err := scaffold.New(dir, scaffold.App{Module: module, FrameworkPath: c.String("framework-path")})
				if err != nil {
					return err
				}
				for _, f := range files {
					fmt.Fprintf(c.App.Writer, "  wrote %s\n", f)
				}
				tidy := exec.CommandContext(c.Context, "go", "mod", "tidy")
				tidy.Dir, tidy.Stdout, tidy.Stderr = dir, c.App.ErrWriter, c.App.ErrWriter
				if err := tidy.Run(); err != nil {
					return fmt.Errorf("new: go mod tidy in %s: %w (run it there once the network or module cache has the framework's modules)", dir, err)
				}
				fmt.Fprintf(c.App.Writer, "Wrote the app %s in %s. Next:\n  cd %s\n  go run . migrate && go run . queue:dispatch hello.greet '{\"name\": \"Ada\"}' && go run . queue:work --stop-when-empty\n", module, dir, dir)
				return nil
			},
		},
			makeCommand("make:module", "Write the module NAME, and add it to the app's modules in main.go", "NAME",
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
		},
		// Any other command runs the app in the working directory.
		Action: func(c *cli.Context) error {
			if !c.Args().Present() {
				return cli.ShowAppHelp(c)
			}
			if _, err := os.Stat("go.mod"); err != nil {
				return fmt.Errorf("%q is not a navree command, and this folder holds no app (no go.mod) to run it: cd into an app, or make one with navree new", c.Args().First())
			}
			app := exec.CommandContext(c.Context, "go", append([]string{"run", "."}, c.Args().Slice()...)...)
			app.Stdin, app.Stdout, app.Stderr = os.Stdin, c.App.Writer, c.App.ErrWriter
			return app.Run()
		},
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
	return c.RunContext(ctx, append([]string{"navree"}, args...))
}

// valued are the flags of new and make:* that take a value.
var valued = map[string]bool{"module": true, "framework-path": true, "event": true}

// makeCommand is a make:* command: it runs generate, whose arguments
// argsUsage names (usageErr is the error for another count of them),
// writes its changes and runs go mod tidy for their imports, or with
// --dry-run says what it would write.
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
			// modules go.mod does not list yet.
			tidy := exec.CommandContext(c.Context, "go", "mod", "tidy")
			tidy.Stdout, tidy.Stderr = c.App.ErrWriter, c.App.ErrWriter
			if err := tidy.Run(); err != nil {
				return fmt.Errorf("%s: wrote the files above, then go mod tidy failed: %w (run it once the network or module cache has the modules the new imports need)", name, err)
			}
			return nil
		},
	}
}
