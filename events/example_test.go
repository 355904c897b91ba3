package events_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/config"
	"github.com/navree/navree/events"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/queuetest"
	"go.uber.org/fx"
)

// InvoicePaid is an event: a value that encodes to JSON, with a stable
// name.
type InvoicePaid struct {
	InvoiceID int64   `json:"invoice_id"`
	Amount    float64 `json:"amount"`
}

func (InvoicePaid) EventName() string { return "billing.invoice_paid" }

// noop is a queued listener's handler that does nothing.
var noop = events.HandlerFunc[InvoicePaid](func(context.Context, InvoicePaid, queue.JobContext) error { return nil })

func Example() {
	// In an app, events.Module() builds the bus and modules register
	// listeners with events.Listen, ListenFunc, Sync and SyncFunc. Here, by hand,
	// on the queue fake, which records jobs instead of queueing them.
	fake := queuetest.NewFake()
	thank := events.QueuedListener[InvoicePaid]("crm.thank_customer", noop,
		events.Options(queue.Options{Queue: "mail", MaxAttempts: 5, Backoff: queue.Fixed(time.Minute)}))
	count := events.QueuedListener[InvoicePaid]("stats.count_payment", noop)
	bus, err := events.New(events.Params{Dispatcher: fake.Dispatcher(), Listeners: []events.Listener{
		thank, count,
		events.SyncListener[InvoicePaid]("billing.mark_paid", func(ctx context.Context, e InvoicePaid) error {
			fmt.Println("sync: invoice", e.InvoiceID, "is paid")
			return nil
		}),
	}})
	if err != nil {
		panic(err)
	}

	if err := bus.Dispatch(context.Background(), InvoicePaid{InvoiceID: 42, Amount: 99.5}); err != nil {
		panic(err)
	}
	for _, e := range fake.Envelopes() {
		fmt.Printf("queued %s %s meta=%s queue=%q attempts=%d\n", e.Name, e.Payload, e.Meta, e.Options.Queue, e.Options.MaxAttempts)
	}
	// An event without listeners is no error.
	fmt.Println(bus.Dispatch(context.Background(), ContactsExported{CompanyID: "acme"}))
	// Output:
	// sync: invoice 42 is paid
	// queued events.crm.thank_customer {"invoice_id":42,"amount":99.5} meta={"event":"billing.invoice_paid"} queue="mail" attempts=5
	// queued events.stats.count_payment {"invoice_id":42,"amount":99.5} meta={"event":"billing.invoice_paid"} queue="" attempts=0
	// <nil>
}

func ExampleSyncListener() {
	fake := queuetest.NewFake()
	thank := events.QueuedListener[InvoicePaid]("crm.thank_customer", noop)
	bus, err := events.New(events.Params{Dispatcher: fake.Dispatcher(), Listeners: []events.Listener{
		events.SyncListener[InvoicePaid]("billing.check", func(ctx context.Context, e InvoicePaid) error {
			fmt.Println("billing.check runs")
			return errors.New("the ledger is closed")
		}),
		events.SyncListener[InvoicePaid]("billing.crash", func(ctx context.Context, e InvoicePaid) error {
			fmt.Println("billing.crash runs")
			var totals map[int64]float64
			totals[e.InvoiceID] += e.Amount // a nil map: panics
			return nil
		}),
		events.SyncListener[InvoicePaid]("billing.fine", func(ctx context.Context, e InvoicePaid) error {
			fmt.Println("billing.fine runs")
			return nil
		}),
		thank,
	}})
	if err != nil {
		panic(err)
	}

	// Every sync listener runs, in the order they are written; their
	// errors, and the panic, come back joined. The queued listener's job
	// was queued first, and stays queued.
	err = bus.Dispatch(context.Background(), InvoicePaid{InvoiceID: 42, Amount: 99.5})
	fmt.Println(err)
	fmt.Println(len(fake.Envelopes()), "job queued")
	// Output:
	// billing.check runs
	// billing.crash runs
	// billing.fine runs
	// events: listener billing.check of billing.invoice_paid: the ledger is closed
	// events: listener billing.crash of billing.invoice_paid panicked: assignment to entry in nil map
	// 1 job queued
}

func ExampleBus_Dispatch() {
	fake := queuetest.NewFake()
	thank := events.QueuedListener[InvoicePaid]("crm.thank_customer", noop)
	bus, err := events.New(events.Params{Dispatcher: fake.Dispatcher(), Listeners: []events.Listener{thank}})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	// Refused events queue nothing and run no listener.
	fmt.Println(bus.Dispatch(ctx, InvoicePaid{InvoiceID: 42, Amount: math.NaN()}))
	fmt.Println(bus.Dispatch(ctx, &InvoicePaid{InvoiceID: 42}))
	fmt.Println(len(fake.Envelopes()), "jobs queued")
	// Output:
	// events: dispatch billing.invoice_paid: the event does not encode to JSON: json: unsupported value: NaN
	// events: dispatch billing.invoice_paid: its listeners take a events_test.InvoicePaid, not a *events_test.InvoicePaid
	// 0 jobs queued
}

func ExampleQueuedListener() {
	// Without fx, the bus gets the listener, and the queue the bus's jobs.
	l := events.QueuedListener[InvoicePaid]("billing.send_receipt", events.HandlerFunc[InvoicePaid](
		func(ctx context.Context, e InvoicePaid, jc queue.JobContext) error {
			fmt.Printf("%s: invoice %d, attempt %d, meta %s\n", jc.Name, e.InvoiceID, jc.Attempt, jc.Meta)
			return nil
		}))
	q, err := queue.New(queue.Params{Config: queue.Config{Driver: queue.Memory}})
	if err != nil {
		panic(err)
	}
	bus, err := events.New(events.Params{Dispatcher: q, Listeners: []events.Listener{l}})
	if err == nil {
		err = q.Handle(bus.Jobs()...)
	}
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if err := bus.Dispatch(ctx, InvoicePaid{InvoiceID: 42, Amount: 99.5}); err != nil {
		panic(err)
	}
	stats, err := q.RunPending(ctx) // what a worker does
	fmt.Println(stats.Succeeded, "succeeded", err)
	// Output:
	// events.billing.send_receipt: invoice 42, attempt 1, meta {"event":"billing.invoice_paid"}
	// 1 succeeded <nil>
}

// receipts is a service a queued listener's handler needs.
type receipts struct{ prefix string }

func ExampleListen() {
	var (
		bus *events.Bus
		q   *queue.Queue
	)
	a := app.New(config.Module(config.Sources{}), queue.ModuleWith(queue.Config{Driver: queue.Memory}), events.Module(),
		fx.Supply(&receipts{prefix: "receipt-"}),
		// fx builds the handler with what it needs, as queue.Register does.
		events.Listen[InvoicePaid]("billing.send_receipt", func(r *receipts) events.Handler[InvoicePaid] {
			return events.HandlerFunc[InvoicePaid](func(ctx context.Context, e InvoicePaid, jc queue.JobContext) error {
				fmt.Printf("%s: %s%d, attempt %d\n", jc.Name, r.prefix, e.InvoiceID, jc.Attempt)
				return nil
			})
		}),
		events.SyncFunc[InvoicePaid]("billing.mark_paid", func(ctx context.Context, e InvoicePaid) error {
			fmt.Println("sync: invoice", e.InvoiceID, "is paid")
			return nil
		}),
		fx.Populate(&bus, &q))
	a.Stderr = io.Discard // the job attempt's log line
	if _, err := a.Build(); err != nil {
		panic(err)
	}
	ctx := context.Background()
	if err := bus.Dispatch(ctx, InvoicePaid{InvoiceID: 42, Amount: 99.5}); err != nil {
		panic(err)
	}
	stats, err := q.RunPending(ctx)
	fmt.Println(stats.Succeeded, "succeeded", err)
	// Output:
	// sync: invoice 42 is paid
	// events.billing.send_receipt: receipt-42, attempt 1
	// 1 succeeded <nil>
}

// ReceiptsSent is a job that runs once every listener of an invoice's
// payment has handled it.
type ReceiptsSent struct {
	InvoiceID int `json:"invoice_id"`
}

func (ReceiptsSent) JobName() string { return "billing.receipts_sent" }

func ExampleBus_Envelopes() {
	listener := func(name string) events.Listener {
		return events.QueuedListener[InvoicePaid](name, events.HandlerFunc[InvoicePaid](
			func(ctx context.Context, e InvoicePaid, jc queue.JobContext) error {
				fmt.Printf("%s: invoice %d\n", jc.Name, e.InvoiceID)
				return nil
			}))
	}
	q, err := queue.New(queue.Params{Config: queue.Config{Driver: queue.Memory}})
	if err != nil {
		panic(err)
	}
	bus, err := events.New(events.Params{Dispatcher: q, Listeners: []events.Listener{listener("billing.send_receipt"), listener("billing.update_ledger")}})
	if err == nil {
		err = q.Handle(append(bus.Jobs(), queue.HandlerOf[ReceiptsSent](queue.HandlerFunc[ReceiptsSent](
			func(ctx context.Context, j ReceiptsSent, jc queue.JobContext) error {
				up, err := jc.Upstream(ctx)
				fmt.Printf("then: invoice %d, after %d listeners\n", j.InvoiceID, len(up))
				return err
			})))...)
	}
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	// The event's queued listeners as a batch, with a then job.
	envs, err := bus.Envelopes(InvoicePaid{InvoiceID: 42})
	if err != nil {
		panic(err)
	}
	if _, err := q.DispatchFlow(ctx, queue.Batch(queue.JobsOf(envs...)...).Then(ReceiptsSent{InvoiceID: 42})); err != nil {
		panic(err)
	}
	for {
		if stats, err := q.RunPending(ctx); err != nil || stats.Processed == 0 {
			break
		}
	}
	// Output:
	// events.billing.send_receipt: invoice 42
	// events.billing.update_ledger: invoice 42
	// then: invoice 42, after 2 listeners
}
