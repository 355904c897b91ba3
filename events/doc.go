// Package events dispatches application events to listeners, which run
// inside the dispatch or as queued jobs of their own.
//
// # Events and listeners
//
// An [Event] is a JSON-encodable value with a stable name. Modules
// register listeners with fx options, each with a stable name of its own:
// [Listen] and [ListenFunc] for a queued listener (its handler built by
// fx, or a function), [Sync] and [SyncFunc] for one that runs inside
// Dispatch: as queue.Register and queue.HandleFunc, the Func form takes a
// function, the other a constructor whose parameters fx provides.
//
//	events.Listen[ContactsExported]("crm.notify_owner", newOwnerNotifier),
//	events.SyncFunc[ContactsExported]("audit.record", func(ctx context.Context, e ContactsExported) error { … }),
//
// # Dispatching
//
// [Module] provides the app's [*Bus]. [Bus.Dispatch] encodes the event
// once and queues one job per queued listener (job type events.NAME), so
// a slow or failing listener is retried alone and holds up no other. The
// jobs join the unit of work in ctx: a request that fails, or a
// transaction that rolls back, queues none. Then the sync listeners run,
// every one, and their errors come back joined.
//
// # Testing
//
// Package eventstest has a fake bus that records events; with the real
// bus and the queue fake, each queued listener's job is an envelope of its
// own. events:list prints every listener.
package events
