package events

import (
	"github.com/navree/navree/app"
	"go.uber.org/fx"
)

// Module is the event bus. It provides the app's [*Bus], with every
// listener the app's modules register ([Listen], [On], [Sync]), and adds
// the command events:list. It has no configuration: each listener says
// how it runs. A queued listener's job is registered with the queue by
// Listen or On, so the app needs queue.Module.
func Module() fx.Option {
	return fx.Module("events",
		fx.Provide(New),
		app.Commands(listCommand()),
	)
}
