// Package schedule dispatches jobs on a schedule: cron expressions and
// intervals, each tick dispatched once through the queue however many
// schedulers run.
//
// # Entries
//
// Modules register entries beside their jobs: [Cron] for a five-field
// cron expression, [Every] for an interval, and [CronFunc] and
// [EveryFunc] for a job made from each tick's time. Options set the zone
// ([In]), skip a tick while the last run is pending
// ([WithoutOverlapping]), bound the catch-up after downtime ([CatchUp])
// and give the job's options ([Options]):
//
//	var Module = fx.Module("reports",
//		queue.HandleFunc(sendNightlyReport),
//		schedule.Cron("reports.nightly", "0 3 * * *", NightlyReport{}, schedule.In("Europe/Berlin")),
//		schedule.Every("contacts.sync", 15*time.Minute, SyncContacts{}, schedule.WithoutOverlapping()),
//	)
//
// A bad expression, an unknown zone or a duplicate name fails the boot,
// naming the entry and where it was registered.
//
// # Running
//
// [Module] provides the app's [*Scheduler] and the commands
// schedule:work (the scheduler process), schedule:list, schedule:run (one
// pass, for system cron) and schedule:prune. Each tick is claimed in the
// table schedule_ticks in the transaction that dispatches its job, so
// two schedulers on one database dispatch it once. Times are wall-clock
// times of the entry's zone: a time the clocks skip runs once as they
// land, one they show twice runs at the first. After downtime, only the
// latest missed tick within the catch-up window runs.
//
// # Testing and without fx
//
// [Scheduler.RunDue] dispatches what is due by the app's clock, so a
// test with a fixed clock (app.WithClock) checks an entry's ticks;
// [Scheduler.Next] names the next tick after a time. Without fx, [New]
// builds a scheduler of [CronEntry], [CronFuncEntry], [EveryEntry] and
// [EveryFuncEntry] values. The guide is docs/scheduling.md.
package schedule
