// Command app is Navree's example app: every module the framework has so
// far, wired in one binary, demo jobs, an export that lands in its
// requester's inbox, and a small page that counts its visits.
//
//	go run ./cmd/app migrate                     # create the tables in var/app.db
//	go run ./cmd/app demo                        # queue a batch of demo jobs
//	go run ./cmd/app queue:work --stop-when-empty # run them
//	go run ./cmd/app queue:failed                # the one that failed
//	go run ./cmd/app mail:preview export-ready   # the export's mail
//	go run ./cmd/app schedule:list               # the scheduled entries
//	go run ./cmd/app schedule:work               # dispatch them at their ticks
//	go run ./cmd/app serve                       # http://127.0.0.1:8080 links every page
//	go run ./cmd/app dev                         # serve, a worker and the scheduler at once
//	go run ./cmd/app --help                      # every command
//
// The same binary is what you deploy: set APP_DATABASE__URL to a
// postgres:// URL to use PostgreSQL.
package main

import (
	"github.com/navree/navree/app"
	"github.com/navree/navree/app/metrics"
	"github.com/navree/navree/config"
	"github.com/navree/navree/db"
	"github.com/navree/navree/events"
	"github.com/navree/navree/mail"
	"github.com/navree/navree/notify"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/dashboard"
	"github.com/navree/navree/schedule"
	"go.uber.org/fx"
)

// modules is the example app, apart from where its config comes from.
func modules() []fx.Option {
	return []fx.Option{
		db.Module(),
		queue.Module(),
		dashboard.Module(), // [dashboard] enabled = true serves it under /navree/queue
		metrics.Module(),   // [metrics] enabled = true serves /metrics, to whom metrics.Access lets in
		mail.Module(),
		events.Module(),
		notify.Module(),
		schedule.Module(),
		visitsModule,
		demoModule,
		exportModule,
		signInModule,
	}
}

func main() {
	a := app.New(append([]fx.Option{config.Module(config.Defaults())}, modules()...)...)
	a.Name, a.Usage = "app", "the Navree example app"
	a.Main()
}
