package app

import (
	"context"

	"github.com/urfave/cli/v2"
	"go.uber.org/fx"
)

// Graph is an app built once with the services of every command, to run
// several commands in one process against the same services. Tests use it
// (see testing/apptest); a process runs one command with [App.Run].
type Graph struct {
	app  *App
	fx   *fx.App
	cmds []Command
	runs map[string]func(*cli.Context) error
}

// Build builds the app, and extra options with it, once, with the services
// of every command: each constructor the app calls runs once, however many
// commands [Graph.Run] runs. Nothing starts until [Graph.Start].
func (a *App) Build(extra ...fx.Option) (*Graph, error) {
	cmds, err := a.commands(extra...)
	if err != nil {
		return nil, err
	}
	g := &Graph{app: a, cmds: cmds, runs: map[string]func(*cli.Context) error{}}
	opts := []fx.Option{a.base(a.Stderr), fx.Options(extra...), fx.Invoke(checkBoot)}
	for _, cmd := range cmds {
		deps, run := cmd.Action.bind()
		g.runs[cmd.Name] = run
		opts = append(opts, deps)
	}
	g.fx = fx.New(opts...)
	if err := g.fx.Err(); err != nil {
		return nil, bootError(err)
	}
	return g, nil
}

// Start runs the app's start hooks.
func (g *Graph) Start(ctx context.Context) error {
	if err := g.fx.Start(ctx); err != nil {
		return bootError(err)
	}
	return nil
}

// Stop runs the app's stop hooks.
func (g *Graph) Stop(ctx context.Context) error { return g.fx.Stop(ctx) }

// Run runs the command line args (without the program's name) on the
// built app, printing to the App's Stdout and Stderr as they are now.
func (g *Graph) Run(ctx context.Context, args []string) error {
	return g.app.runLine(ctx, g.cmds, func(c *cli.Context, cmd Command) error {
		return g.runs[cmd.Name](c)
	}, args)
}
