// Package queue is Navree's background job queue: a request stores a job
// and answers at once; worker processes run it, retry it when it fails and
// keep what keeps failing for a person to retry.
//
// # Jobs
//
// A job is a payload struct with a stable name ([Job]); it may choose its
// queue, retries, time limit and uniqueness ([WithOptions], [Options]). A
// module registers the handler of each job type with [Register] or
// [HandleFunc].
//
// # Dispatching
//
// [Module] provides the app's [*Queue] and, for code that only dispatches,
// its [Dispatcher]. [Queue.Dispatch] stores a job and returns its id (a
// UUID v7); [Queue.Later] delays it; [Queue.Push] queues an [Envelope],
// for example one with its own [Envelope.UniqueKey]. A job dispatched
// while a unit of work is open (db.Transaction, or the request's) joins
// it: it is queued only if the unit commits.
//
// # Storage
//
// The database driver (the default) keeps jobs in the tables jobs and
// failed_jobs of the app's database, SQLite or PostgreSQL, which the
// migration set "queue" creates; any number of processes share them. The
// memory driver keeps them in the process, for tests and single-process
// development.
//
// # Workers
//
// [Queue.Work] runs jobs until it is stopped; [Queue.RunPending] runs
// those available now. Each Work call registers itself and beats its
// heart; a job whose worker dies, or falls silent, is taken over once the
// worker's last heartbeat is queue.rescue_after old (15 s by default),
// whatever the job's timeout, judged on a clock that every worker of the
// database shares and no step or skew of a system clock moves (with the
// system clock; a clock of the app's own decides it in tests). A live
// worker's job is never taken over for its age.
//
// # Reading the queue
//
// [Inspector.Stats] counts each queue's jobs by state, and [Inspector.Jobs] lists
// the jobs of one state a page at a time, from the indexes the workers
// use: what a status command or a dashboard shows, without SQL of its
// own.
//
// # Failed jobs
//
// A job that used up its attempts is kept until [Inspector.Retry] puts it
// back or [Inspector.FlushFailed] deletes it; [Inspector.Failed] lists them, a
// page at a time ([FailedQuery]).
//
// See docs/queues.md for the whole guide.
package queue
