package notify_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/config"
	"github.com/navree/navree/db"
	"github.com/navree/navree/mail"
	"github.com/navree/navree/mail/mailtest"
	"github.com/navree/navree/notify"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/testing/apptest"
	"github.com/uptrace/bun"
	"go.uber.org/fx"
)

// customer is a stored notifiable.
type customer struct {
	id, email string
}

func (c customer) NotifiableType() string { return "customer" }
func (c customer) NotifiableID() string   { return c.id }
func (c customer) RouteFor(channel string) string {
	if channel == notify.Mail {
		return c.email
	}
	return ""
}

// InvoicePaid goes out by mail and to the inbox.
type InvoicePaid struct {
	InvoiceID string `json:"invoice_id"`
	Amount    string `json:"amount"`
	SkipInbox bool   `json:"skip_inbox,omitempty"` // ShouldSend declines the database channel
}

func (InvoicePaid) NotificationType() string { return "invoice.paid" }
func (n InvoicePaid) Via(to notify.Notifiable) []string {
	if to.NotifiableType() == "on-demand" {
		return []string{notify.Mail}
	}
	return []string{notify.Mail, notify.Database}
}
func (n InvoicePaid) ToMail(ctx context.Context, to notify.Notifiable) (mail.Mail, error) {
	return mail.Message{To: []string{to.RouteFor(notify.Mail)}, Subject: "Invoice " + n.InvoiceID + " is paid",
		Text: "We received " + n.Amount + ". Thank you."}, nil
}
func (n InvoicePaid) ToDatabase(to notify.Notifiable) (any, error) {
	return map[string]string{"invoice_id": n.InvoiceID, "amount": n.Amount}, nil
}
func (n InvoicePaid) ShouldSend(ctx context.Context, to notify.Notifiable, channel string) bool {
	return !(n.SkipInbox && channel == notify.Database)
}

var t0 = time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)

type notifyApp struct {
	*apptest.App
	Notifier *notify.Notifier
	Inbox    *notify.Inbox
	Queue    *queue.Queue
	DB       *db.DB
	Clock    *apptest.Clock
}

func newApp(t *testing.T, database fx.Option, srv *mailtest.Server, opts ...fx.Option) *notifyApp {
	t.Helper()
	a := &notifyApp{Clock: apptest.FixedClock(t0)}
	mailConfig := map[string]any{"transport": "memory"}
	if srv != nil {
		mailConfig = map[string]any{"transport": "smtp", "host": srv.Host(), "port": srv.Port(), "tls": "none", "from": "billing@crm.example.com"}
	}
	a.App = apptest.New(t, append([]fx.Option{database, db.Module(), queue.Module(), mail.Module(), notify.Module(),
		notify.Register[InvoicePaid](), apptest.Config(map[string]any{"mail": mailConfig}), app.WithClock(a.Clock),
		fx.Populate(&a.Notifier, &a.Inbox, &a.Queue, &a.DB)}, opts...)...)
	return a
}

func eachDatabase(t *testing.T, f func(t *testing.T, database fx.Option)) {
	t.Run("sqlite", func(t *testing.T) { f(t, apptest.TempDatabase()) })
	t.Run("postgres", func(t *testing.T) { f(t, apptest.Postgres()) })
}

func run(t *testing.T, q *queue.Queue) queue.WorkStats {
	t.Helper()
	stats, err := q.RunPending(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return stats
}

func pending(t *testing.T, q *queue.Queue) int {
	t.Helper()
	n, err := q.Inspector().PendingCount(context.Background(), "default")
	if err != nil {
		t.Fatal(err)
	}
	return n
}

var ada = customer{id: "42", email: "ada@example.com"}

func TestAMailAndDatabaseNotificationReachesBoth(t *testing.T) {
	eachDatabase(t, func(t *testing.T, database fx.Option) {
		srv := mailtest.NewServer(t)
		a := newApp(t, database, srv)
		ids, err := a.Notifier.Send(context.Background(), []notify.Notifiable{ada}, InvoicePaid{InvoiceID: "inv-7", Amount: "€120"})
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) != 1 || pending(t, a.Queue) != 2 {
			t.Fatalf("ids %v, %d jobs: want one id and a job per channel", ids, pending(t, a.Queue))
		}
		if stats := run(t, a.Queue); stats.Succeeded != 2 {
			t.Fatalf("RunPending = %+v", stats)
		}
		got := srv.Received()
		if len(got) != 1 {
			t.Fatalf("the server received %d messages, want 1", len(got))
		}
		if got[0].Subject != "Invoice inv-7 is paid" || strings.TrimSpace(got[0].Text) != "We received €120. Thank you." || got[0].Envelope.To[0] != "ada@example.com" {
			t.Fatalf("the server received %q to %v: %q", got[0].Subject, got[0].Envelope.To, got[0].Text)
		}
		list, _, err := a.Inbox.List(context.Background(), ada, notify.ListQuery{})
		if err != nil {
			t.Fatal(err)
		}
		var data map[string]string
		if len(list) != 1 || list[0].ID != ids[0] || list[0].Type != "invoice.paid" || json.Unmarshal(list[0].Data, &data) != nil ||
			data["invoice_id"] != "inv-7" || !list[0].CreatedAt.Equal(t0) || !list[0].ReadAt.IsZero() {
			t.Fatalf("the inbox holds %+v", list)
		}
	})
}

func TestARefusedMailIsRetriedAloneAndTheInboxHasOneRow(t *testing.T) {
	eachDatabase(t, func(t *testing.T, database fx.Option) {
		srv := mailtest.NewServer(t)
		srv.Refuse(1, "451 4.3.0 try again later")
		a := newApp(t, database, srv)
		ids, err := a.Notifier.Send(context.Background(), []notify.Notifiable{ada}, InvoicePaid{InvoiceID: "inv-7", Amount: "€120"})
		if err != nil {
			t.Fatal(err)
		}
		if stats := run(t, a.Queue); stats.Succeeded != 1 || stats.Released != 1 {
			t.Fatalf("first run: %+v, want the database delivery done and the mail released", stats)
		}
		a.Clock.Advance(time.Minute)
		if stats := run(t, a.Queue); stats.Succeeded != 1 || stats.Processed != 1 {
			t.Fatalf("second run: %+v, want the mail alone retried and sent", stats)
		}
		if n, err := a.Inbox.UnreadCount(context.Background(), ada); err != nil || n != 1 || len(srv.Received()) != 1 {
			t.Fatalf("%d unread (%v), %d mails; want one of each", n, err, len(srv.Received()))
		}
		// A delivery run again (a worker killed after its insert) writes no
		// second row.
		payload, _ := json.Marshal(notify.SendJob{V: 1, ID: ids[0], Type: "invoice.paid", Channel: notify.Database,
			Notifiable: notify.Recipient{Type: "customer", ID: "42"}, Notification: json.RawMessage(`{"invoice_id":"inv-7","amount":"€120"}`)})
		if _, err := a.Queue.Push(context.Background(), queue.Envelope{Name: "notify.send", Payload: payload}); err != nil {
			t.Fatal(err)
		}
		if stats := run(t, a.Queue); stats.Succeeded != 1 {
			t.Fatalf("the repeated delivery: %+v", stats)
		}
		if n, _ := a.Inbox.UnreadCount(context.Background(), ada); n != 1 {
			t.Fatalf("%d rows after a repeated delivery, want 1", n)
		}
	})
}

// statements counts the statements a database runs.
type statements struct{ n atomic.Int64 }

func (s *statements) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }
func (s *statements) AfterQuery(context.Context, *bun.QueryEvent)                        { s.n.Add(1) }

func TestAThousandNotifiablesInOneSend(t *testing.T) {
	eachDatabase(t, func(t *testing.T, database fx.Option) {
		a := newApp(t, database, nil)
		to := make([]notify.Notifiable, 1000)
		for i := range to {
			to[i] = customer{id: fmt.Sprint(i), email: fmt.Sprintf("c%d@example.com", i)}
		}
		var counted statements
		a.DB.AddQueryHook(&counted)
		ids, err := a.Notifier.Send(context.Background(), to, InvoicePaid{InvoiceID: "inv-7", Amount: "€120"})
		if err != nil {
			t.Fatal(err)
		}
		if n := counted.n.Load(); n > 30 {
			t.Fatalf("Send to 1,000 notifiables ran %d statements, want a bounded batch", n)
		}
		if len(ids) != 1000 || pending(t, a.Queue) != 2000 {
			t.Fatalf("%d ids, %d jobs; want 1,000 and 2,000", len(ids), pending(t, a.Queue))
		}
		seen := map[string]bool{}
		for _, id := range ids {
			seen[id] = true
		}
		if len(seen) != 1000 {
			t.Fatalf("%d distinct ids for 1,000 notifiables", len(seen))
		}
	})
}

func TestOnDemandAndDeclinedDeliveries(t *testing.T) {
	srv := mailtest.NewServer(t)
	a := newApp(t, apptest.TempDatabase(), srv)
	ctx := context.Background()
	if _, err := a.Notifier.Send(ctx, []notify.Notifiable{notify.Route(notify.Mail, "ops@example.com")}, InvoicePaid{InvoiceID: "inv-8"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Notifier.Send(ctx, []notify.Notifiable{ada}, InvoicePaid{InvoiceID: "inv-9", SkipInbox: true}); err != nil {
		t.Fatal(err)
	}
	if stats := run(t, a.Queue); stats.Succeeded != 3 {
		t.Fatalf("RunPending = %+v", stats)
	}
	got := srv.Received()
	if len(got) != 2 || got[0].Envelope.To[0] != "ops@example.com" || got[1].Subject != "Invoice inv-9 is paid" {
		t.Fatalf("received %+v", got)
	}
	if n, _ := a.Inbox.UnreadCount(ctx, ada); n != 0 {
		t.Fatalf("a declined database delivery stored %d rows", n)
	}
}

// Reminder is sent through a channel of the app's own.
type Reminder struct {
	Text string `json:"text"`
}

func (Reminder) NotificationType() string       { return "crm.reminder" }
func (Reminder) Via(notify.Notifiable) []string { return []string{"sms"} }

type smsGateway struct {
	mu   sync.Mutex
	sent []string
}

type smsChannel struct{ g *smsGateway }

func (c smsChannel) Deliver(ctx context.Context, d notify.Delivery) error {
	c.g.mu.Lock()
	defer c.g.mu.Unlock()
	c.g.sent = append(c.g.sent, d.Notifiable.NotifiableID()+": "+d.Notification.(Reminder).Text)
	return nil
}

func TestSendRefusesWhatCannotBeDeliveredAndQueuesNothing(t *testing.T) {
	a := newApp(t, apptest.TempDatabase(), nil)
	ctx := context.Background()
	tests := []struct {
		name string
		to   []notify.Notifiable
		n    notify.Notification
		want string
	}{
		{"unregistered", []notify.Notifiable{ada}, Reminder{}, "notify: crm.reminder is not registered: add notify.Register[notify_test.Reminder]() to a module: notification not sent"},
		{"no mail route", []notify.Notifiable{ada, customer{id: "7"}}, InvoicePaid{},
			`notify: invoice.paid to customer 7: the notifiable has no mail route (RouteFor("mail") is empty): notification not sent`},
		{"nil notifiable", []notify.Notifiable{nil}, InvoicePaid{}, "notify: invoice.paid: notifiable 1 of 1 is nil: notification not sent"},
		{"nil notification", []notify.Notifiable{ada}, nil, "notify: a nil notification: notification not sent"},
	}
	for _, tt := range tests {
		if _, err := a.Notifier.Send(ctx, tt.to, tt.n); err == nil || err.Error() != tt.want || !errors.Is(err, notify.ErrNotSent) {
			t.Errorf("%s: %v\nwant:   %s", tt.name, err, tt.want)
		}
	}
	b := newApp(t, apptest.TempDatabase(), nil, notify.Register[Reminder]())
	if _, err := b.Notifier.Send(ctx, []notify.Notifiable{ada}, Reminder{}); err == nil ||
		err.Error() != `notify: crm.reminder to customer 42: it is sent via "sms", a channel no module registered (notify.AddChannel): notification not sent` {
		t.Errorf("an unknown channel: %v", err)
	}
	if n := pending(t, a.Queue) + pending(t, b.Queue); n != 0 {
		t.Fatalf("%d jobs queued by refused sends", n)
	}
}

func TestAChannelOfTheAppsOwnAndSendNow(t *testing.T) {
	g := &smsGateway{}
	a := newApp(t, apptest.TempDatabase(), nil, notify.Register[Reminder](), fx.Supply(g),
		notify.AddChannel("sms", func(g *smsGateway) notify.Channel { return smsChannel{g} }))
	ctx := context.Background()
	if _, err := a.Notifier.Send(ctx, []notify.Notifiable{ada}, Reminder{Text: "call Grace"}); err != nil {
		t.Fatal(err)
	}
	if stats := run(t, a.Queue); stats.Succeeded != 1 {
		t.Fatalf("RunPending = %+v", stats)
	}
	if err := a.Notifier.SendNow(ctx, []notify.Notifiable{customer{id: "43"}}, Reminder{Text: "call Ada"}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(g.sent, ",") != "42: call Grace,43: call Ada" {
		t.Fatalf("the sms channel sent %v", g.sent)
	}
}

func TestRolledBackWorkNotifiesNoOne(t *testing.T) {
	eachDatabase(t, func(t *testing.T, database fx.Option) {
		a := newApp(t, database, nil)
		err := a.DB.Transaction(context.Background(), func(ctx context.Context) error {
			if _, err := a.Notifier.Send(ctx, []notify.Notifiable{ada}, InvoicePaid{InvoiceID: "inv-7"}); err != nil {
				return err
			}
			return errors.New("the payment was reversed")
		})
		if err == nil || pending(t, a.Queue) != 0 {
			t.Fatalf("%v; %d jobs pending, want none", err, pending(t, a.Queue))
		}
	})
}

// TestWithoutFx: the Notifier is built on the queue, and the queue is
// given its notify.send job.
func TestWithoutFx(t *testing.T) {
	g := &smsGateway{}
	q, err := queue.New(queue.Params{Config: queue.Config{Driver: queue.Memory}})
	if err != nil {
		t.Fatal(err)
	}
	n, err := notify.New(notify.Params{Dispatcher: q, Types: []notify.Type{notify.TypeOf[Reminder]()}, Channels: map[string]notify.Channel{"sms": smsChannel{g}}})
	if err == nil {
		err = q.Handle(n.Jobs()...)
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Send(context.Background(), []notify.Notifiable{ada}, Reminder{Text: "call Grace"}); err != nil {
		t.Fatal(err)
	}
	if stats := run(t, q); stats.Succeeded != 1 || strings.Join(g.sent, ",") != "42: call Grace" {
		t.Fatalf("RunPending = %+v, sent %v", stats, g.sent)
	}
}

// Broken renders a template with a key its data lacks.
type Broken struct{}

func (Broken) NotificationType() string       { return "crm.broken" }
func (Broken) Via(notify.Notifiable) []string { return []string{notify.Mail, notify.Mail} }
func (Broken) ToMail(ctx context.Context, to notify.Notifiable) (mail.Mail, error) {
	return mail.Template(to.RouteFor(notify.Mail), "Broken", "mail/broken").With(map[string]any{}), nil
}

func TestAMailThatDoesNotRenderFailsAtOnce(t *testing.T) {
	a := newApp(t, apptest.TempDatabase(), nil, notify.Register[Broken](),
		mail.Templates(fstest.MapFS{"mail/broken.txt.tmpl": {Data: []byte("Hello {{.Name}}")}}))
	if _, err := a.Notifier.Send(context.Background(), []notify.Notifiable{ada}, Broken{}); err != nil {
		t.Fatal(err)
	}
	if stats := run(t, a.Queue); stats.Processed != 1 || stats.Failed != 1 {
		t.Fatalf("RunPending = %+v, want one delivery (Via names mail twice) failed at once", stats)
	}
	if _, err := a.Notifier.Send(context.Background(), []notify.Notifiable{customer{email: "x@example.com"}}, InvoicePaid{}); err == nil ||
		!strings.Contains(err.Error(), "the database channel needs the notifiable's type and id") {
		t.Fatalf("a database delivery to a notifiable without an id: %v", err)
	}
	n, err := notify.New(notify.Params{Types: []notify.Type{notify.TypeOf[Reminder]()}, Channels: map[string]notify.Channel{"sms": smsChannel{&smsGateway{}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Send(context.Background(), []notify.Notifiable{ada}, Reminder{}); err == nil || !strings.Contains(err.Error(), "this Notifier has no queue") {
		t.Fatalf("Send without a Dispatcher: %v", err)
	}
	err = newAppErr(notify.AddChannel("sms", func() notify.Channel { return nil }))
	if err == nil || !strings.Contains(err.Error(), "the constructor func() notify.Channel returned a nil notify.Channel") {
		t.Fatalf("a nil channel: %v", err)
	}
}

// newAppErr builds the notifier of opts and returns the boot's error.
func newAppErr(opts ...fx.Option) error {
	a := app.New(append([]fx.Option{config.Module(config.Sources{}), queue.ModuleWith(queue.Config{Driver: queue.Memory}), notify.Module(),
		fx.Populate(new(*notify.Notifier))}, opts...)...)
	_, err := a.Build()
	return err
}
