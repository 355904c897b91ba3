package queue_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/config"
	"github.com/navree/navree/db"
	"github.com/navree/navree/queue"
	"go.uber.org/fx"
)

// The examples of docs/queues.md, compiled. Mailer stands in for the mail
// module.

type Mailer struct{ sent []string }

func (m *Mailer) Send(ctx context.Context, to, subject string) error {
	m.sent = append(m.sent, to+": "+subject)
	return nil
}

// ExportCompany builds a CSV of a company's contacts and mails the link to
// whoever asked.
type ExportCompany struct {
	CompanyID   string `json:"company_id"`
	RequestedBy string `json:"requested_by"`
}

func (ExportCompany) JobName() string { return "contacts.export_company" }

type exportCompanyHandler struct {
	db     *db.DB
	mailer *Mailer
}

func (h *exportCompanyHandler) Handle(ctx context.Context, job ExportCompany, jc queue.JobContext) error {
	return h.mailer.Send(ctx, job.RequestedBy, "Your export of "+job.CompanyID+" is ready")
}

// SyncUserCalendar has options of its own.
type SyncUserCalendar struct {
	UserID string `json:"user_id"`
}

func (SyncUserCalendar) JobName() string { return "activities.sync_user_calendar" }

func (SyncUserCalendar) JobOptions() queue.Options {
	return queue.Options{
		Queue:       "sync",
		MaxAttempts: 5,
		Backoff:     queue.Fixed(30 * time.Second),
		Timeout:     time.Minute,
		UniqueFor:   5 * time.Minute,
	}
}

// contactsDocModule registers both, as docs/queues.md shows.
var contactsDocModule = fx.Module("contacts",
	fx.Provide(func() *Mailer { return &Mailer{} }),
	queue.Register[ExportCompany](func(d *db.DB, m *Mailer) *exportCompanyHandler {
		return &exportCompanyHandler{db: d, mailer: m}
	}),
	queue.HandleFunc(func(ctx context.Context, job SyncUserCalendar, jc queue.JobContext) error {
		return nil
	}),
)

// CalendarChanges dispatches through the Dispatcher only.
type CalendarChanges struct{ dispatcher queue.Dispatcher }

func (h *CalendarChanges) Changed(ctx context.Context, userID string) error {
	if _, err := h.dispatcher.Dispatch(ctx, SyncUserCalendar{UserID: userID}); err != nil {
		return err
	}
	_, err := h.dispatcher.DispatchLater(ctx, SyncUserCalendar{UserID: userID}, time.Minute)
	return err
}

func Example_docs() {
	dir, _ := os.MkdirTemp("", "navree-docs")
	defer os.RemoveAll(dir)
	var q *queue.Queue
	var mailer *Mailer
	var d queue.Dispatcher
	a := app.New(
		config.Module(config.Sources{Overrides: map[string]any{
			"database.url": "sqlite://" + filepath.Join(dir, "app.db"),
			"queue.driver": "memory",
		}}),
		db.Module(),
		queue.Module(),
		contactsDocModule,
		fx.Populate(&q, &mailer, &d),
	)
	graph, err := a.Build()
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	graph.Start(ctx)
	defer graph.Stop(ctx)

	id, _ := q.Dispatch(ctx, ExportCompany{CompanyID: "acme", RequestedBy: "ada@example.com"})
	first, _ := q.Dispatch(ctx, SyncUserCalendar{UserID: "u1"})
	again, _ := q.Dispatch(ctx, SyncUserCalendar{UserID: "u1"}) // unique for 5 minutes
	(&CalendarChanges{d}).Changed(ctx, "u2")

	e, _ := queue.EnvelopeOf(SyncUserCalendar{UserID: "u3"})
	key := "calendar:u3"
	e.UniqueKey = &key
	q.Push(ctx, e)

	stats, _ := q.Work(ctx, queue.WorkOptions{Queues: []string{"default", "sync"}, StopWhenEmpty: true})
	fmt.Println(len(id) == 36, first == again, stats, mailer.sent)

	_, err = q.Inspector().Retry(ctx, "0199c1d2-6f7e-7a31-b5d4-2f0c8e9a1b23")
	fmt.Println(err, errors.Is(err, queue.ErrNoFailedJob))
	// Output:
	// true true Processed 4 job attempt(s): 4 succeeded, 0 released for retry, 0 failed. [ada@example.com: Your export of acme is ready]
	// there is no failed job with id 0199c1d2-6f7e-7a31-b5d4-2f0c8e9a1b23 true
}
