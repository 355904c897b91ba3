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
// Modules add commands to the app with [Commands]. A command's Action
// names the services it needs as parameters; the app builds and starts
// only those, and only when that command runs. Listing the commands (help,
// --version) builds no service at all. The command's context is cancelled
// by SIGINT or SIGTERM ([App.Main]) or by the caller of [App.Run].
//
// Every app has the serve command: an HTTP server on [http] addr
// (default 127.0.0.1:8080) running the [Route] values that modules
// contribute, wrapped in their [Middleware], and shut down gracefully.
//
// # Time
//
// The app provides a [Clock], the system clock unless [WithClock] replaces
// it, so tests decide what time it is.
package app
