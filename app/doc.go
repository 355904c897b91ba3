// Package app builds a Navree application: fx modules and the command
// line that runs them.
//
//	func main() {
//		app.New(
//			config.Module(config.Defaults()),
//			db.Module(),
//			contacts.Module,
//		).Main()
//	}
//
// # Commands
//
// Modules add commands to the app with [Commands]. A command's Action says
// what it uses: [Uses] with one service or an fx.In struct of several, or
// [ActionFunc] for a command that uses none.
//
//	app.Commands(app.Command{
//		Name:  "contacts:reindex",
//		Usage: "Rebuild the search index of the contacts",
//		Action: app.Uses(func(c *cli.Context, idx *contacts.Index) error {
//			return idx.Rebuild(c.Context)
//		}),
//	})
//
// The app builds and starts only the services of the command that runs,
// once, when it runs. Listing the commands (help, --version, the error of
// an unknown command) builds no service at all: commands are supplied
// values, read without calling a constructor or running an fx.Invoke. The
// command's context is cancelled by SIGINT or SIGTERM ([App.Main]) or by
// the caller of [App.Run].
//
// # Modules
//
// A module uses no fx.Invoke: an invoke runs whenever the app is built,
// so it would build its services for every command. It gives commands
// what they need through [Uses], and registers through value groups
// ([Commands], [Routes], [AsRoute], [AsMiddleware]). Its constructors do no
// I/O: they only build values, and connections, listeners and loops start
// and stop in lifecycle hooks (fx.StartStopHook), which run when a command
// starts and stops.
//
// Every app has the serve command: an HTTP server on [http] addr
// (default 127.0.0.1:8080) running the [Route] values that modules
// contribute, wrapped in their [Middleware], and shut down gracefully. In
// development (no APP_ENV, or APP_ENV=development), while no route serves
// /, it answers GET / with a welcome page linking the app's pages (its GET
// routes without a wildcard), and prints them when it starts.
//
// # Time
//
// The app provides a [Clock], the system clock unless [WithClock] replaces
// it, so tests decide what time it is.
package app
