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
			Action: func(c *cli.Context, g *Greeter) error {
				fmt.Fprintf(c.App.Writer, "%s, %s!\n", g.greeting, c.Args().First())
				return nil
			},
		}),
	)
	a.Name, a.Stdout = "crm", os.Stdout
	if err := a.Run(context.Background(), []string{"greet", "Ada"}); err != nil {
		fmt.Println(err)
	}
	// Output:
	// Hello, Ada!
}
