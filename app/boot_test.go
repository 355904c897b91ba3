package app_test

import (
	"context"
	"io"
	"testing"

	"github.com/navree/navree/app"
	"github.com/navree/navree/config"
	"github.com/navree/navree/db"
	"github.com/navree/navree/events"
	"github.com/navree/navree/mail"
	"github.com/navree/navree/notify"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/schedule"
	"github.com/urfave/cli/v2"
	"go.uber.org/fx"
)

// uses is a command that needs a T.
func uses[T any]() fx.Option {
	return app.Commands(app.Command{Name: "use", Action: app.Uses(func(*cli.Context, T) error { return nil })})
}

// TestAMissingTypeNamesItsModule: a type the app's modules lack, which a
// module of the framework provides, fails the boot naming the module to
// add; with that module the app builds.
func TestAMissingTypeNamesItsModule(t *testing.T) {
	type handler struct{}
	both := fx.Options(
		fx.Provide(func(*events.Bus, *notify.Notifier) *handler { return &handler{} }),
		uses[*handler](),
	)
	src := config.Module(config.Sources{})
	tests := []struct {
		name    string
		without []fx.Option // the app: it lacks the module
		with    fx.Option   // what to add
		want    string
	}{
		{"db", []fx.Option{src, uses[*db.DB]()}, db.Module(), "missing type: *db.DB (add db.Module() to the app's modules)"},
		{"migrator", []fx.Option{src, uses[*db.Migrator]()}, db.Module(), "missing type: *db.Migrator (add db.Module() to the app's modules)"},
		{"queue", []fx.Option{src, db.Module(), uses[*queue.Queue]()}, queue.Module(), "missing type: *queue.Queue (add queue.Module() to the app's modules)"},
		{"dispatcher", []fx.Option{src, db.Module(), uses[queue.Dispatcher]()}, queue.Module(), "missing type: queue.Dispatcher (add queue.Module() to the app's modules)"},
		{"mail", []fx.Option{src, db.Module(), queue.Module(), uses[*mail.Mailer]()}, mail.Module(), "missing type: *mail.Mailer (add mail.Module() to the app's modules)"},
		{"events", []fx.Option{src, db.Module(), queue.Module(), uses[*events.Bus]()}, events.Module(), "missing type: *events.Bus (add events.Module() to the app's modules)"},
		{"schedule", []fx.Option{src, db.Module(), queue.Module(), uses[*schedule.Scheduler]()}, schedule.Module(), "missing type: *schedule.Scheduler (add schedule.Module() to the app's modules)"},
		{"config", []fx.Option{uses[app.HTTPConfig]()}, src, "missing type: *config.Config (add config.Module(config.Defaults()) to the app's modules)"},
		{"two", []fx.Option{src, db.Module(), queue.Module(), mail.Module(), both}, fx.Options(events.Module(), notify.Module()),
			"missing types: *events.Bus; *notify.Notifier (add events.Module() and notify.Module() to the app's modules)"},
		{"one of two", []fx.Option{src, db.Module(), queue.Module(), mail.Module(), events.Module(), both}, notify.Module(),
			"missing type: *notify.Notifier (add notify.Module() to the app's modules)"},
		{"not the framework's", []fx.Option{src, uses[*handler]()}, fx.Provide(func() *handler { return &handler{} }), "missing type: *app_test.handler"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := app.New(tt.without...)
			a.Stdout, a.Stderr = io.Discard, io.Discard
			if err := a.Run(context.Background(), []string{"use"}); err == nil || err.Error() != tt.want {
				t.Errorf("run: %v\nwant %s", err, tt.want)
			}
			if _, err := a.Build(); err == nil || err.Error() != tt.want {
				t.Errorf("build: %v\nwant %s", err, tt.want)
			}
			a = app.New(append(tt.without, tt.with)...)
			if _, err := a.Build(); err != nil {
				t.Errorf("with the module: %v", err)
			}
		})
	}
}
