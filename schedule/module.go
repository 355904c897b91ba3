package schedule

import (
	"github.com/navree/navree/app"
	"github.com/navree/navree/config"
	"github.com/navree/navree/db"
	"github.com/navree/navree/migrations"
	"go.uber.org/fx"
)

// Module is the scheduler, configured by the [schedule] section. It
// provides the app's [*Scheduler], with every entry the app's modules
// register ([Cron], [CronFunc], [Every]), adds the migration set
// "schedule" (the table schedule_ticks) and the commands schedule:work,
// schedule:list and schedule:run. It needs db.Module and queue.Module.
func Module() fx.Option {
	return fx.Module("schedule",
		config.Section("schedule", DefaultConfig()),
		fx.Provide(New),
		db.Migrations("schedule", migrations.Schedule),
		app.Commands(commands()...),
	)
}
