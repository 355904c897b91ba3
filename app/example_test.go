package app_test

import (
	"context"
	"fmt"
	"os"

	"github.com/navree/navree/app"
	"github.com/navree/navree/config"
	"github.com/urfave/cli/v2"
	"go.uber.org/fx"
)

// Greeter is a service a command needs.
type Greeter struct{ greeting string }

func ExampleApp_Run() {
	a := app.New(
		config.Module(config.Sources{}),
		fx.Provide(func() *Greeter { return &Greeter{greeting: "Hello"} }),
		app.Commands(app.Command{
			Name:      "greet",
			Usage:     "Greet someone",
			ArgsUsage: "NAME",
			// Only the services named here are built, and only for this command.
			Action: app.Uses(func(c *cli.Context, g *Greeter) error {
				fmt.Fprintf(c.App.Writer, "%s, %s!\n", g.greeting, c.Args().First())
				return nil
			}),
		}),
	)
	a.Name, a.Stdout = "crm", os.Stdout
	if err := a.Run(context.Background(), []string{"greet", "Ada"}); err != nil {
		fmt.Println(err)
	}
	// Output:
	// Hello, Ada!
}

// Signer is another service a command needs.
type Signer struct{ name string }

func ExampleUses() {
	// greetIn is what the greet command uses: several services in one
	// fx.In struct.
	type greetIn struct {
		fx.In
		Greeter *Greeter
		Signer  *Signer
	}
	a := app.New(
		config.Module(config.Sources{}),
		fx.Provide(func() *Greeter { return &Greeter{greeting: "Hello"} }),
		fx.Provide(func() *Signer { return &Signer{name: "the crm"} }),
		app.Commands(
			app.Command{
				Name: "greet",
				Action: app.Uses(func(c *cli.Context, p greetIn) error {
					fmt.Fprintf(c.App.Writer, "%s, %s! (%s)\n", p.Greeter.greeting, c.Args().First(), p.Signer.name)
					return nil
				}),
			},
			app.Command{
				Name: "ping",
				// A command that uses no service.
				Action: app.ActionFunc(func(c *cli.Context) error {
					fmt.Fprintln(c.App.Writer, "pong")
					return nil
				}),
			},
		),
	)
	a.Name, a.Stdout = "crm", os.Stdout
	for _, args := range [][]string{{"greet", "Ada"}, {"ping"}} {
		if err := a.Run(context.Background(), args); err != nil {
			fmt.Println(err)
		}
	}
	// Output:
	// Hello, Ada! (the crm)
	// pong
}
