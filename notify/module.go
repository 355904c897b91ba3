package notify

import (
	"log/slog"
	"reflect"

	"github.com/navree/navree/app"
	"github.com/navree/navree/db"
	"github.com/navree/navree/mail"
	"github.com/navree/navree/migrations"
	"github.com/navree/navree/queue"
	"go.uber.org/fx"
)

// Module is notifications. It provides the app's [*Notifier] and [*Inbox],
// registers the notify.send job that delivers each notification over one
// channel and the notify.prune job ([PruneJob]), adds the migration set
// "notifications" (the table the database channel writes) and the
// command notify:prune. Its channels are mail (with mail.Module),
// database (with db.Module), log, and those the app adds ([AddChannel]).
// It has no configuration.
func Module() fx.Option {
	return fx.Module("notify",
		fx.Provide(fx.Private, newDeliverer),
		fx.Provide(func(d *deliverer, q queue.Dispatcher) *Notifier { return &Notifier{d: d, dispatcher: q} }),
		fx.Provide(NewInbox),
		queue.Register[SendJob](func(d *deliverer) queue.Handler[SendJob] { return sendHandler{d} }),
		queue.Register[PruneJob](newPruneHandler),
		db.Migrations("notifications", migrations.Notifications),
		app.Commands(commands()...),
	)
}

// Params are what [New] builds a Notifier from, for an app built without
// fx.
type Params struct {
	Dispatcher queue.Dispatcher
	Mailer     *mail.Mailer // for the mail channel; nil for none
	DB         *db.DB       // for the database channel; nil for none
	Clock      app.Clock    // stamps the database channel's rows; the system clock when nil
	Logger     *slog.Logger // for the log channel; nil logs nothing
	// Types are the notification types sent ([TypeOf]).
	Types []Type
	// Channels are the app's own channels, by name.
	Channels map[string]Channel
}

// Type is a registered notification type, for [Params].
type Type struct{ t registeredType }

// TypeOf is [Register] for an app built without fx.
func TypeOf[N Notification]() Type {
	var zero N
	return Type{registeredType{name: zero.NotificationType(), typ: reflect.TypeFor[N](), where: "notify.TypeOf"}}
}

// New returns the Notifier of p. Give the queue its [Notifier.Jobs].
func New(p Params) (*Notifier, error) {
	in := delivererIn{Mailer: p.Mailer, DB: p.DB, Clock: p.Clock, Logger: p.Logger}
	for _, t := range p.Types {
		in.Types = append(in.Types, t.t)
	}
	for name, c := range p.Channels {
		in.Channels = append(in.Channels, namedChannel{name: name, where: "notify.Params", channel: c})
	}
	d, err := newDeliverer(in)
	if err != nil {
		return nil, err
	}
	return &Notifier{d: d, dispatcher: p.Dispatcher}, nil
}
