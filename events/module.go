package events

import (
	"log/slog"

	"github.com/navree/navree/app"
	"github.com/navree/navree/queue"
	"go.uber.org/fx"
)

// Module is the event bus. It provides the app's [*Bus], with every
// listener the app's modules register ([Listen], [ListenFunc], [SyncFunc]), and adds
// the command events:list. It has no configuration: each listener says
// how it runs. A queued listener's job is registered with the queue by
// Listen or ListenFunc, so the app needs queue.Module.
func Module() fx.Option {
	return fx.Module("events",
		fx.Provide(func(p params) (*Bus, error) {
			return New(Params{Dispatcher: p.Dispatcher, Logger: p.Logger, Listeners: p.Listeners})
		}),
		app.Commands(listCommand()),
	)
}

// params are the Params the module gathers: the listeners the app's
// modules register.
type params struct {
	fx.In
	Dispatcher queue.Dispatcher
	Logger     *slog.Logger `optional:"true"`
	Listeners  []Listener   `group:"events.listeners"`
}
