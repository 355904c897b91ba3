// Package apptest builds a Navree app for one test: fx modules, a fresh
// database, replaced services, a fixed clock, and the app's commands and
// HTTP routes to call.
//
//	func TestExport(t *testing.T) {
//		clock := apptest.FixedClock(time.Date(2026, 10, 26, 8, 0, 0, 0, time.UTC))
//		var q *queue.Queue
//		a := apptest.New(t,
//			apptest.TempDatabase(), // a fresh SQLite file, migrated
//			db.Module(), queue.Module(), contacts.Module,
//			app.WithClock(clock),
//			fx.Populate(&q),
//		)
//		q.Dispatch(ctx, contacts.ExportContacts{...})
//		out, err := a.RunCommand("queue:work", "--stop-when-empty")
//		...
//	}
//
// The app's configuration comes only from the section defaults and
// [Config] (never from config files or the environment), so do not add
// config.Module: apptest provides the configuration itself. [New] starts
// the app and stops it when the test ends; a failure to build or start it
// fails the test with the real error.
//
// [App.RunCommand] runs a command on the app's own services (the same
// memory queue, the same fakes); [App.HTTP] and [App.ServeHTTP] serve the
// routes as serve would, behind the same middleware.
package apptest
