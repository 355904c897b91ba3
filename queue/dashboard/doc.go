// Package dashboard is the queue's web dashboard: the queues with their
// counts, the jobs of each state, a job's detail and the failed jobs,
// and the batches, chains and workflows, with the actions an operator
// takes on them. It is served by the app's serve command, under
// /navree/queue by default.
//
//	app.New(
//		config.Module(config.Defaults()),
//		db.Module(),
//		queue.Module(),
//		dashboard.Module(), // [dashboard] enabled = true
//		dashboard.Access(func(r *http.Request) dashboard.Role {
//			// what the app knows of the request's user
//			return dashboard.Viewer
//		}),
//	).Main()
//
// # Pages
//
// The queues page shows each queue's waiting, delayed, running and
// failed jobs ([queue.Inspector.Stats]: each count stops at
// [queue.CountLimit], shown as "100000+"), how long its oldest waiting
// job has waited, and what the workers of every process finished of it a
// minute over the last five minutes ([queue.Inspector.Throughput]). The table
// polls for fresh counts (htmx).
//
// The jobs page lists the jobs of one state, by queue and type, a page
// at a time from the queue's cursors ([queue.Inspector.Jobs]), with Cancel
// for a waiting, delayed or running job; the failed page is its failed
// state, with Retry and Delete. "Retry all matching…", "Delete all
// matching…" and "Cancel all matching…" act on every job of the list's
// filter, after a confirmation page. A job's page finds the job by its
// id, in whichever state it is now ([queue.Inspector.Job]), and shows its
// options, times and last error, with the buttons of its state; its
// payload and meta are shown when asked for, with the values of the keys
// of [Config.MaskKeys] masked at any depth. The queues page pauses and
// resumes queues ([queue.Inspector.Pause]).
//
// The batches page lists the chains, batches and workflows, newest
// first, by kind, with a progress bar of their steps
// ([queue.Inspector.Flows]). A flow's page shows its steps
// ([queue.Inspector.Flow]) as a graph, drawn on the server as SVG in
// layers by dependency depth (but for a batch of more than 60 steps), and
// as a table with each step's result or error; an operator cancels it
// while it runs ([queue.Inspector.CancelFlow]) and retries its failed
// steps ([queue.Inspector.RetryFlow]).
//
// # Access
//
// The dashboard is closed by default. An [AccessFunc], given with
// [Access] or [Params.AccessFunc], decides each request's [Role]: a
// [Viewer] reads, an [Operator] also acts; [NoAccess] is 403 Forbidden.
// Without one every request is refused, except, in development (no
// APP_ENV, or APP_ENV=development), one straight from a loopback address,
// which is an operator.
//
// Actions are POST requests, refused from another origin
// ([net/http.CrossOriginProtection]). Every value is escaped
// (html/template), and pages set a Content-Security-Policy that allows
// the dashboard's own script and style only.
//
// # Assets
//
// The templates, one CSS file and htmx 2.0.11 (0BSD, its licence in
// static/htmx.LICENSE) are embedded: there is no build step.
//
// See docs/dashboard.md for the guide.
package dashboard
