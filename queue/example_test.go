package queue_test

import (
	"context"
	"fmt"
	"time"

	"github.com/navree/navree/queue"
)

// SendInvoice is a job: its payload, and a stable name.
type SendInvoice struct {
	InvoiceID int64 `json:"invoice_id"`
}

func (SendInvoice) JobName() string { return "billing.send_invoice" }

// JobOptions chooses the queue, retries and uniqueness of every
// SendInvoice.
func (SendInvoice) JobOptions() queue.Options {
	return queue.Options{Queue: "mail", MaxAttempts: 5, Backoff: queue.Fixed(30 * time.Second), UniqueFor: time.Hour}
}

func Example() {
	// In an app, queue.Module() builds the queue and modules register
	// handlers with queue.Register or queue.HandleFunc. Here, by hand:
	q, err := queue.New(queue.Params{
		Config: queue.Config{Driver: queue.Memory}})
	if err == nil {
		err = q.Handle(queue.HandlerOf[SendInvoice](queue.HandlerFunc[SendInvoice](
			func(ctx context.Context, job SendInvoice, jc queue.JobContext) error {
				fmt.Println("sending invoice", job.InvoiceID)
				return nil
			})))
	}
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	first, _ := q.Dispatch(ctx, SendInvoice{InvoiceID: 42})
	again, _ := q.Dispatch(ctx, SendInvoice{InvoiceID: 42}) // unique for an hour: the same job
	q.Later(ctx, SendInvoice{InvoiceID: 43}, 10*time.Minute)

	n, _ := q.Inspector().PendingCount(ctx, "mail")
	fmt.Println(first == again, n)

	_, err = q.Dispatch(ctx, Unregistered{})
	fmt.Println(err)
	// Output:
	// true 2
	// queue: unknown job "nobody.handles": no module registered a handler for it (queue.Register or queue.HandleFunc; without fx, Queue.Handle)
}

// Bounce always fails.
type Bounce struct {
	To string `json:"to"`
}

func (Bounce) JobName() string           { return "mail.bounce" }
func (Bounce) JobOptions() queue.Options { return queue.Options{MaxAttempts: 1} }

// Failed returns a page of the failed jobs and the cursor of the next;
// an admin screen shows a page and links to the next.
func ExampleInspector_Failed() {
	q, _ := queue.New(queue.Params{
		Config: queue.Config{Driver: queue.Memory}})
	q.Handle(queue.HandlerOf[Bounce](queue.HandlerFunc[Bounce](
		func(ctx context.Context, job Bounce, jc queue.JobContext) error {
			return fmt.Errorf("smtp refused %s", job.To)
		})))
	ctx := context.Background()
	for _, to := range []string{"ada@example.com", "bob@example.com", "cy@example.com"} {
		q.Dispatch(ctx, Bounce{To: to})
	}
	q.RunPending(ctx)

	page := queue.FailedQuery{Limit: 2}
	for {
		jobs, next, err := q.Inspector().Failed(ctx, page)
		if err != nil {
			panic(err)
		}
		for _, job := range jobs {
			fmt.Printf("%s after %d attempt(s): %s\n", job.Name, job.Attempts, job.Error)
		}
		if next == "" {
			break
		}
		fmt.Println("-- next page")
		page.After = next
	}
	// Output:
	// mail.bounce after 1 attempt(s): smtp refused ada@example.com
	// mail.bounce after 1 attempt(s): smtp refused bob@example.com
	// -- next page
	// mail.bounce after 1 attempt(s): smtp refused cy@example.com
}

// CountRows counts the rows of an import and records the count as its
// result; ReportRows reads it.
type CountRows struct {
	File string `json:"file"`
}

func (CountRows) JobName() string { return "imports.count_rows" }

type ReportRows struct{}

func (ReportRows) JobName() string { return "imports.report_rows" }

// A chain passes a result on: each job runs once the one before it has
// succeeded, and reads what it recorded.
func ExampleChain() {
	q, err := queue.New(queue.Params{Config: queue.Config{Driver: queue.Memory}})
	if err == nil {
		err = q.Handle(
			queue.HandlerOf[CountRows](queue.HandlerFunc[CountRows](func(ctx context.Context, job CountRows, jc queue.JobContext) error {
				return jc.SetResult(map[string]int{"rows": 1204})
			})),
			queue.HandlerOf[ReportRows](queue.HandlerFunc[ReportRows](func(ctx context.Context, job ReportRows, jc queue.JobContext) error {
				before, err := jc.Upstream(ctx)
				if err != nil {
					return err
				}
				var counted struct{ Rows int }
				if err := before[0].Decode(&counted); err != nil {
					return err
				}
				fmt.Printf("%s counted %d rows\n", before[0].Step, counted.Rows)
				return nil
			})))
	}
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	id, err := q.DispatchFlow(ctx, queue.Chain(CountRows{File: "contacts.csv"}, ReportRows{}))
	if err != nil {
		panic(err)
	}
	for { // what the workers do
		if stats, err := q.RunPending(ctx); err != nil || stats.Processed == 0 {
			break
		}
	}
	chain, _ := q.Inspector().Flow(ctx, id)
	fmt.Println(chain.Kind, chain.State, chain.Succeeded, "of", chain.Total)
	// Output:
	// imports.count_rows counted 1204 rows
	// chain succeeded 2 of 2
}

// Invoice is SendInvoice at version 2 of its payload, once named
// billing.invoice: version 2 renamed "id" to "invoice_id".
type Invoice struct {
	InvoiceID int64 `json:"invoice_id"`
}

func (Invoice) JobName() string      { return "billing.send_invoice_v2" }
func (Invoice) JobAliases() []string { return []string{"billing.invoice"} }
func (Invoice) PayloadUpgrades() []queue.Upgrade {
	return []queue.Upgrade{queue.RenameField("id", "invoice_id")}
}

func ExampleWithUpgrades() {
	q, err := queue.New(queue.Params{Config: queue.Config{Driver: queue.Memory}})
	if err == nil {
		err = q.Handle(queue.HandlerOf[Invoice](queue.HandlerFunc[Invoice](
			func(ctx context.Context, inv Invoice, jc queue.JobContext) error {
				fmt.Printf("%s: invoice %d\n", jc.Name, inv.InvoiceID)
				return nil
			})))
	}
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	// A job as the old build queued it: under the old name, a payload of
	// version 1 (stored without a version; pushed here with it, as a push
	// without one takes this build's).
	q.Push(ctx, queue.Envelope{Name: "billing.invoice", Payload: []byte(`{"id": 42}`), Meta: []byte(`{"payload_version": 1}`)})
	// One this build queues: version 2.
	q.Dispatch(ctx, Invoice{InvoiceID: 43})
	q.RunPending(ctx)
	// Output:
	// billing.send_invoice_v2: invoice 42
	// billing.send_invoice_v2: invoice 43
}
