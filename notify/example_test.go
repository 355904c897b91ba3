package notify_test

// The examples of docs/notifications.md, compiled and run.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/config"
	"github.com/navree/navree/db"
	"github.com/navree/navree/mail"
	"github.com/navree/navree/mail/mailtest"
	"github.com/navree/navree/migrations"
	"github.com/navree/navree/notify"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/queuetest"
	"github.com/navree/navree/testing/apptest"
	"go.uber.org/fx"
)

// member is a notifiable: a member of the app, reached by mail and, when
// they gave a number, by SMS.
type member struct {
	ID    string `json:"id"`
	Email string `json:"email"`
	Phone string `json:"phone,omitempty"`
}

func (m member) NotifiableType() string { return "member" }
func (m member) NotifiableID() string   { return m.ID }
func (m member) RouteFor(channel string) string {
	switch channel {
	case notify.Mail:
		return m.Email
	case "sms":
		return m.Phone
	}
	return ""
}

// TrialEnding tells a member their trial ends soon, by mail and in their
// inbox.
type TrialEnding struct {
	Plan string `json:"plan"`
	Days int    `json:"days"`
}

func (TrialEnding) NotificationType() string       { return "billing.trial_ending" }
func (TrialEnding) Via(notify.Notifiable) []string { return []string{notify.Mail, notify.Database} }

func (n TrialEnding) ToMail(ctx context.Context, to notify.Notifiable) (mail.Mail, error) {
	return mail.Message{
		To:      []string{to.RouteFor(notify.Mail)},
		Subject: fmt.Sprintf("Your %s trial ends in %d days", n.Plan, n.Days),
		Text:    "Choose a plan to keep your data.",
	}, nil
}

func (n TrialEnding) ToDatabase(notify.Notifiable) (any, error) { return n, nil }

func (n TrialEnding) ToLog(to notify.Notifiable) string {
	return fmt.Sprintf("the %s trial of member %s ends in %d days", n.Plan, to.NotifiableID(), n.Days)
}

// upgraded are the members who chose a plan since: their TrialEnding is
// declined when its delivery runs.
var upgraded = map[string]bool{"grace": true}

func (n TrialEnding) ShouldSend(ctx context.Context, to notify.Notifiable, channel string) bool {
	return !upgraded[to.NotifiableID()]
}

var (
	adaMember   = member{ID: "ada", Email: "ada@example.com", Phone: "+15550100"}
	graceMember = member{ID: "grace", Email: "grace@example.com"}
)

// exampleClock is the examples' clock.
var exampleClock = apptest.FixedClock(time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC))

// exampleDB opens a fresh SQLite database migrated with the set
// notifications, as `migrate` does in an app; close removes it.
func exampleDB() (d *db.DB, close func()) {
	dir, err := os.MkdirTemp("", "notify-example")
	if err != nil {
		panic(err)
	}
	cfg := db.DefaultConfig()
	cfg.URL = "sqlite://" + filepath.Join(dir, "app.db")
	d, err = db.Open(cfg)
	if err != nil {
		panic(err)
	}
	sets := []db.MigrationSet{{Name: "notifications", FS: migrations.Notifications}}
	done, err := db.NewMigrator(d, sets).Migrate(context.Background())
	if err != nil {
		panic(err)
	}
	for _, m := range done {
		fmt.Println("Migrated", m.ID())
	}
	return d, func() { d.Close(); os.RemoveAll(dir) }
}

// Without fx: the mailer and the notifier are built on the queue, and
// the queue is given their jobs.
func Example() {
	d, closeDB := exampleDB()
	defer closeDB()
	q, err := queue.New(queue.Params{Config: queue.Config{Driver: queue.Memory}})
	if err != nil {
		panic(err)
	}
	mailer, err := mail.New(mail.Params{Config: mail.Config{Transport: mail.Memory}, Dispatcher: q})
	if err != nil {
		panic(err)
	}
	notifier, err := notify.New(notify.Params{Dispatcher: q, Mailer: mailer, DB: d, Clock: exampleClock,
		Types: []notify.Type{notify.TypeOf[TrialEnding]()}})
	if err != nil {
		panic(err)
	}
	if err := q.Handle(slices.Concat(mailer.Jobs(), notifier.Jobs())...); err != nil {
		panic(err)
	}
	inbox := notify.NewInbox(d, exampleClock)

	ctx := context.Background()
	ids, err := notifier.Send(ctx, []notify.Notifiable{adaMember}, TrialEnding{Plan: "pro", Days: 3})
	if err != nil {
		panic(err)
	}
	pending, _ := q.Inspector().PendingCount(ctx, "default")
	fmt.Println(len(ids), "id,", pending, "notify.send jobs")

	stats, err := q.RunPending(ctx) // what a worker does
	fmt.Println(stats.Succeeded, "succeeded", err)
	for _, m := range mailer.Memory().Sent() {
		msg, _ := mailtest.Parse(m.Raw)
		fmt.Println("mail to", msg.To[0]+":", msg.Subject)
	}
	page, _, err := inbox.List(ctx, adaMember, notify.ListQuery{})
	if err != nil {
		panic(err)
	}
	for _, s := range page {
		fmt.Println("inbox:", s.Type, string(s.Data), "created", s.CreatedAt.Format(time.DateTime), "same id:", s.ID == ids[0])
	}
	// Output:
	// Migrated notifications/0001_create_table
	// 1 id, 2 notify.send jobs
	// 2 succeeded <nil>
	// mail to ada@example.com: Your pro trial ends in 3 days
	// inbox: billing.trial_ending {"plan":"pro","days":3} created 2026-12-03 09:00:00 same id: true
}

// Welcome is a notification no module registered.
type Welcome struct{}

func (Welcome) NotificationType() string       { return "accounts.welcome" }
func (Welcome) Via(notify.Notifiable) []string { return []string{notify.Mail} }

// PlanChanged goes by mail but cannot render for it.
type PlanChanged struct{}

func (PlanChanged) NotificationType() string       { return "billing.plan_changed" }
func (PlanChanged) Via(notify.Notifiable) []string { return []string{notify.Mail} }

// VerificationCode goes by SMS, a channel of the app's own.
type VerificationCode struct {
	Code string `json:"code"`
}

func (VerificationCode) NotificationType() string       { return "accounts.verification_code" }
func (VerificationCode) Via(notify.Notifiable) []string { return []string{"sms"} }

// Send refuses what it cannot deliver before it queues anything, with an
// error that matches notify.ErrNotSent.
func ExampleNotifier_Send_refused() {
	mailer, _ := mail.New(mail.Params{Config: mail.Config{Transport: mail.Memory}})
	fake := queuetest.NewFake()
	notifier, err := notify.New(notify.Params{Dispatcher: fake.Dispatcher(), Mailer: mailer,
		Types: []notify.Type{notify.TypeOf[TrialEnding](), notify.TypeOf[OpsAlert](), notify.TypeOf[PlanChanged](), notify.TypeOf[VerificationCode]()}})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for _, c := range []struct {
		to []notify.Notifiable
		n  notify.Notification
	}{
		{[]notify.Notifiable{adaMember}, Welcome{}},
		{[]notify.Notifiable{adaMember}, &TrialEnding{}},
		{[]notify.Notifiable{graceMember, member{ID: "linus"}}, OpsAlert{}}, // grace's deliveries are not queued either
		{[]notify.Notifiable{adaMember}, TrialEnding{}},                     // this notifier has no database
		{[]notify.Notifiable{adaMember}, PlanChanged{}},
		{[]notify.Notifiable{adaMember}, VerificationCode{}},
		{[]notify.Notifiable{nil}, TrialEnding{}},
		{[]notify.Notifiable{adaMember}, nil},
	} {
		_, err := notifier.Send(ctx, c.to, c.n)
		fmt.Println(err, errors.Is(err, notify.ErrNotSent))
	}
	fmt.Println(len(fake.Envelopes()), "jobs queued")
	// Output:
	// notify: accounts.welcome is not registered: add notify.Register[notify_test.Welcome]() to a module: notification not sent true
	// notify: billing.trial_ending is registered as notify_test.TrialEnding, not *notify_test.TrialEnding: notification not sent true
	// notify: ops.alert to member linus: the notifiable has no mail route (RouteFor("mail") is empty): notification not sent true
	// notify: billing.trial_ending to member ada: it is sent via "database", and the app has no db.Module(): notification not sent true
	// notify: billing.plan_changed to member ada: it is sent via "mail" and has no ToMail method: notification not sent true
	// notify: accounts.verification_code to member ada: it is sent via "sms", a channel no module registered (notify.AddChannel): notification not sent true
	// notify: billing.trial_ending: notifiable 1 of 1 is nil: notification not sent true
	// notify: a nil notification: notification not sent true
	// 0 jobs queued
}

// OpsAlert goes to whoever is on call, by mail and to the log: on demand.
type OpsAlert struct {
	Text string `json:"text"`
}

func (OpsAlert) NotificationType() string { return "ops.alert" }
func (OpsAlert) Via(to notify.Notifiable) []string {
	if to.RouteFor("sms") != "" {
		return []string{notify.Mail, notify.Log, "sms"}
	}
	return []string{notify.Mail, notify.Log}
}
func (n OpsAlert) ToMail(ctx context.Context, to notify.Notifiable) (mail.Mail, error) {
	return mail.Message{To: []string{to.RouteFor(notify.Mail)}, Subject: "Alert: " + n.Text, Text: n.Text}, nil
}

// Each delivery is a notify.send job whose notifiable is a Recipient:
// the notifiable's type and id, and its route for that channel alone.
func ExampleRecipient() {
	fake := queuetest.NewFake()
	mailer, _ := mail.New(mail.Params{Config: mail.Config{Transport: mail.Memory}})
	notifier, err := notify.New(notify.Params{Dispatcher: fake.Dispatcher(), Mailer: mailer,
		Types: []notify.Type{notify.TypeOf[OpsAlert]()}, Channels: map[string]notify.Channel{"sms": textChannel{}}})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	ids, err := notifier.Send(ctx, []notify.Notifiable{adaMember, notify.Route(notify.Mail, "ops@example.com")}, OpsAlert{Text: "disk full"})
	if err != nil {
		panic(err)
	}
	for _, e := range fake.Envelopes() {
		var job notify.SendJob
		json.Unmarshal(e.Payload, &job)
		who := "recipient 2"
		if job.ID == ids[0] {
			who = "recipient 1"
		}
		notifiable, _ := json.Marshal(job.Notifiable)
		fmt.Println(e.Name, who, job.Channel, string(notifiable), string(job.Notification))
	}
	// Output:
	// notify.send recipient 1 mail {"type":"member","id":"ada","routes":{"mail":"ada@example.com"}} {"text":"disk full"}
	// notify.send recipient 1 log {"type":"member","id":"ada"} {"text":"disk full"}
	// notify.send recipient 1 sms {"type":"member","id":"ada","routes":{"sms":"+15550100"}} {"text":"disk full"}
	// notify.send recipient 2 mail {"type":"on-demand","id":"","routes":{"mail":"ops@example.com"}} {"text":"disk full"}
	// notify.send recipient 2 log {"type":"on-demand","id":""} {"text":"disk full"}
}

// PasswordReset is urgent by mail, and kept a day in the inbox.
type PasswordReset struct{}

func (PasswordReset) NotificationType() string       { return "accounts.password_reset" }
func (PasswordReset) Via(notify.Notifiable) []string { return []string{notify.Mail, notify.Database} }
func (PasswordReset) ToMail(ctx context.Context, to notify.Notifiable) (mail.Mail, error) {
	return mail.Message{To: []string{to.RouteFor(notify.Mail)}, Subject: "Reset your password", Text: "…"}, nil
}
func (PasswordReset) ToDatabase(notify.Notifiable) (any, error) { return map[string]any{}, nil }
func (PasswordReset) DeliveryOptions(channel string) queue.Options {
	if channel == notify.Mail {
		return queue.Options{Queue: "high", MaxAttempts: 3, Backoff: queue.Fixed(10 * time.Second), Timeout: 20 * time.Second, Fair: true}
	}
	return queue.Options{} // the defaults
}

// DeliveryOptions sets a channel's job options; what it leaves zero keeps
// notify.send's.
func ExampleWithOptions() {
	fake := queuetest.NewFake()
	d, closeDB := exampleDB()
	defer closeDB()
	mailer, _ := mail.New(mail.Params{Config: mail.Config{Transport: mail.Memory}})
	notifier, err := notify.New(notify.Params{Dispatcher: fake.Dispatcher(), Mailer: mailer, DB: d,
		Types: []notify.Type{notify.TypeOf[PasswordReset]()}})
	if err != nil {
		panic(err)
	}
	if _, err := notifier.Send(context.Background(), []notify.Notifiable{adaMember}, PasswordReset{}); err != nil {
		panic(err)
	}
	for _, e := range fake.Envelopes() {
		var job notify.SendJob
		json.Unmarshal(e.Payload, &job)
		fmt.Printf("%s via %s: queue=%q attempts=%d timeout=%s fair=%t\n", e.Name, job.Channel, e.Options.Queue, e.Options.MaxAttempts, e.Options.Timeout, e.Options.Fair)
	}
	// Output:
	// Migrated notifications/0001_create_table
	// notify.send via mail: queue="high" attempts=3 timeout=20s fair=true
	// notify.send via database: queue="" attempts=5 timeout=0s fair=false
}

// ShouldSend declines a delivery when its job runs: grace upgraded after
// the notification was sent.
func ExampleDecliner() {
	d, closeDB := exampleDB()
	defer closeDB()
	mailer, _ := mail.New(mail.Params{Config: mail.Config{Transport: mail.Memory}})
	q, _ := queue.New(queue.Params{Config: queue.Config{Driver: queue.Memory}})
	notifier, _ := notify.New(notify.Params{Dispatcher: q, Mailer: mailer, DB: d, Types: []notify.Type{notify.TypeOf[TrialEnding]()}})
	q.Handle(notifier.Jobs()...)
	ctx := context.Background()
	if _, err := notifier.Send(ctx, []notify.Notifiable{adaMember, graceMember}, TrialEnding{Plan: "pro", Days: 3}); err != nil {
		panic(err)
	}
	stats, _ := q.RunPending(ctx)
	inbox := notify.NewInbox(d, nil)
	adaUnread, _ := inbox.UnreadCount(ctx, adaMember)
	graceUnread, _ := inbox.UnreadCount(ctx, graceMember)
	fmt.Println(stats.Succeeded, "deliveries succeeded,", len(mailer.Memory().Sent()), "mail sent")
	fmt.Println("unread: ada", adaUnread, "grace", graceUnread)
	// Output:
	// Migrated notifications/0001_create_table
	// 4 deliveries succeeded, 1 mail sent
	// unread: ada 1 grace 0
}

// The log channel writes one line per delivery: ToLog's line, or the
// notification's type, with the type, the id and the notifiable.
func Example_logChannel() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		switch a.Key {
		case slog.TimeKey:
			return slog.Attr{}
		case "id":
			a.Value = slog.StringValue("0199c1d2-…")
		}
		return a
	}}))
	mailer, _ := mail.New(mail.Params{Config: mail.Config{Transport: mail.Memory}})
	notifier, err := notify.New(notify.Params{Mailer: mailer, Logger: logger,
		Types: []notify.Type{notify.TypeOf[OpsAlert]()}})
	if err != nil {
		panic(err)
	}
	// SendNow delivers in the caller: the mail, then the log line.
	err = notifier.SendNow(context.Background(), []notify.Notifiable{notify.Route(notify.Mail, "ops@example.com")}, OpsAlert{Text: "disk full"})
	fmt.Println(err, len(mailer.Memory().Sent()), "mail sent")
	// Output:
	// level=INFO msg=ops.alert logger=navree.notify notification=ops.alert id=0199c1d2-… notifiable="an on-demand route"
	// <nil> 1 mail sent
}

// exampleT is the *testing.T an example does not have, for
// mailtest.NewServer: it runs cleanups when the example is done.
type exampleT struct {
	testing.TB
	cleanups []func()
}

func (t *exampleT) Helper()                        {}
func (t *exampleT) Cleanup(f func())               { t.cleanups = append(t.cleanups, f) }
func (t *exampleT) Errorf(format string, a ...any) { fmt.Printf("test error: "+format+"\n", a...) }
func (t *exampleT) Fatalf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }
func (t *exampleT) done() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}

// The mail channel sends inside the delivery's job: a 4xx has the job
// retried, a 5xx fails it at once.
func Example_mailChannel() {
	t := &exampleT{}
	defer t.done()
	srv := mailtest.NewServer(t)
	srv.Refuse(1, "451 4.3.0 try again later")
	mailer, _ := mail.New(mail.Params{Config: mail.Config{Transport: mail.SMTP, Host: srv.Host(), Port: srv.Port(),
		TLS: mail.NoTLS, From: "billing@crm.example.com"}})
	clock := apptest.FixedClock(time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC))
	q, _ := queue.New(queue.Params{Config: queue.Config{Driver: queue.Memory}, Clock: clock})
	notifier, _ := notify.New(notify.Params{Dispatcher: q, Mailer: mailer, Types: []notify.Type{notify.TypeOf[OpsAlert]()}})
	q.Handle(notifier.Jobs()...)
	ctx := context.Background()

	alert := OpsAlert{Text: "disk full"}
	if _, err := notifier.Send(ctx, []notify.Notifiable{notify.Route(notify.Mail, "ops@example.com")}, alert); err != nil {
		panic(err)
	}
	stats, _ := q.RunPending(ctx)
	fmt.Printf("first run: %d succeeded (the log), %d released (the mail)\n", stats.Succeeded, stats.Released)
	clock.Advance(time.Minute)
	stats, _ = q.RunPending(ctx)
	fmt.Printf("a minute later: %d succeeded, %d received\n", stats.Succeeded, len(srv.Received()))

	srv.Refuse(1, "550 5.1.1 no such user")
	if _, err := notifier.Send(ctx, []notify.Notifiable{notify.Route(notify.Mail, "nobody@example.com")}, alert); err != nil {
		panic(err)
	}
	stats, _ = q.RunPending(ctx)
	fmt.Printf("refused for good: %d failed\n", stats.Failed)
	failed, _, _ := q.Inspector().Failed(ctx, queue.FailedQuery{})
	for _, f := range failed {
		var job notify.SendJob
		json.Unmarshal(f.Payload, &job)
		msg := strings.ReplaceAll(f.Error, job.ID, "0199c1d2-…")
		msg = strings.ReplaceAll(msg, srv.Addr(), "smtp.example.com:587")
		fmt.Printf("%s attempts=%d %s\n", f.Name, f.Attempts, msg)
	}
	// Output:
	// first run: 1 succeeded (the log), 1 released (the mail)
	// a minute later: 1 succeeded, 1 received
	// refused for good: 1 failed
	// notify.send attempts=1 notify: deliver ops.alert 0199c1d2-… via mail: mail: smtp smtp.example.com:587 refused the message permanently at RCPT TO: 550 5.1.1 no such user
}

// textGateway is the SMS provider's client: here it prints.
type textGateway struct{ from string }

func (g *textGateway) SendText(ctx context.Context, to, body string) error {
	fmt.Printf("SMS from %s to %s: %s\n", g.from, to, body)
	return nil
}

// textChannel is an SMS channel: it texts the notifiable's "sms" route
// what the notification's ToSMS says.
type textChannel struct{ g *textGateway }

// SMSNotification renders a notification for the sms channel.
type SMSNotification interface {
	ToSMS(to notify.Notifiable) string
}

func (c textChannel) Deliver(ctx context.Context, d notify.Delivery) error {
	n, ok := d.Notification.(SMSNotification)
	if !ok {
		return queue.Permanent(fmt.Errorf("%s has no ToSMS method", d.Notification.NotificationType()))
	}
	return c.g.SendText(ctx, d.Notifiable.RouteFor("sms"), n.ToSMS(d.Notifiable))
}

func (n VerificationCode) ToSMS(notify.Notifiable) string { return "Your code is " + n.Code }

// An app's own channel: notify.AddChannel builds it with what fx
// provides.
func ExampleAddChannel() {
	var (
		notifier *notify.Notifier
		q        *queue.Queue
	)
	a := app.New(config.Module(config.Sources{}), queue.ModuleWith(queue.Config{Driver: queue.Memory}), notify.Module(),
		notify.Register[VerificationCode](),
		fx.Supply(&textGateway{from: "CRM"}),
		notify.AddChannel("sms", func(g *textGateway) notify.Channel { return textChannel{g} }),
		fx.Populate(&notifier, &q))
	a.Stderr = io.Discard // the job attempt's log line
	if _, err := a.Build(); err != nil {
		panic(err)
	}
	ctx := context.Background()
	if _, err := notifier.Send(ctx, []notify.Notifiable{adaMember}, VerificationCode{Code: "381 204"}); err != nil {
		panic(err)
	}
	stats, err := q.RunPending(ctx)
	fmt.Println(stats.Succeeded, "succeeded", err)
	// Output:
	// SMS from CRM to +15550100: Your code is 381 204
	// 1 succeeded <nil>
}

// The inbox of one member: pages newest first, the unread count, marks,
// deletes, and what it refuses.
func ExampleInbox() {
	d, closeDB := exampleDB()
	defer closeDB()
	clock := apptest.FixedClock(time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC))
	// SendNow stores the rows at once, in the caller; it needs no queue.
	notifier, err := notify.New(notify.Params{DB: d, Clock: clock, Types: []notify.Type{notify.TypeOf[inboxNote]()}})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	var ids []string
	for day := 1; day <= 5; day++ {
		if err := notifier.SendNow(ctx, []notify.Notifiable{adaMember}, inboxNote{Text: fmt.Sprintf("note %d", day)}); err != nil {
			panic(err)
		}
		clock.Advance(time.Hour)
	}
	if err := notifier.SendNow(ctx, []notify.Notifiable{graceMember}, inboxNote{Text: "grace's"}); err != nil {
		panic(err)
	}
	inbox := notify.NewInbox(d, clock)

	// Every page, two at a time.
	q := notify.ListQuery{Limit: 2}
	for {
		page, next, err := inbox.List(ctx, adaMember, q)
		if err != nil {
			panic(err)
		}
		var texts []string
		for _, s := range page {
			texts = append(texts, string(s.Data))
			ids = append(ids, s.ID)
		}
		fmt.Println("page:", strings.Join(texts, " "), "more:", next != "")
		if next == "" {
			break
		}
		q.After = next
	}
	count := func() int {
		n, err := inbox.UnreadCount(ctx, adaMember)
		if err != nil {
			panic(err)
		}
		return n
	}
	fmt.Println("unread:", count())

	n, _ := inbox.MarkRead(ctx, adaMember, ids[0], ids[1])
	fmt.Println("marked read:", n, "unread:", count())
	n, _ = inbox.MarkRead(ctx, adaMember, ids[0], ids[2]) // ids[0] is read already
	fmt.Println("marked read again:", n)
	n, _ = inbox.MarkRead(ctx, graceMember, ids[3]) // not grace's
	fmt.Println("grace marked read:", n)
	unread, _, _ := inbox.List(ctx, adaMember, notify.ListQuery{Unread: true})
	fmt.Println("unread page:", len(unread), "notifications")
	n, _ = inbox.MarkUnread(ctx, adaMember, ids[0])
	fmt.Println("marked unread:", n)
	n, _ = inbox.MarkAllRead(ctx, adaMember)
	fmt.Println("marked all read:", n, "unread:", count())
	n, _ = inbox.Delete(ctx, adaMember, ids[4])
	fmt.Println("deleted:", n)
	clock.Advance(24 * time.Hour)
	n, _ = inbox.Prune(ctx, clock.Now()) // every read notification read before now
	fmt.Println("pruned:", n)
	graceUnread, _ := inbox.UnreadCount(ctx, graceMember)
	fmt.Println("grace's unread:", graceUnread)

	_, _, err = inbox.List(ctx, adaMember, notify.ListQuery{Limit: 500})
	fmt.Println(err, errors.Is(err, notify.ErrInvalidQuery))
	_, _, err = inbox.List(ctx, adaMember, notify.ListQuery{After: "page-2"})
	fmt.Println(err)
	_, err = inbox.MarkRead(ctx, adaMember, "42")
	fmt.Println(err)
	_, err = inbox.Delete(ctx, adaMember, make([]string, 1001)...)
	fmt.Println(err)
	_, err = inbox.UnreadCount(ctx, notify.Route(notify.Mail, "ops@example.com"))
	fmt.Println(err, errors.Is(err, notify.ErrInvalidQuery))
	// Output:
	// Migrated notifications/0001_create_table
	// page: {"text":"note 5"} {"text":"note 4"} more: true
	// page: {"text":"note 3"} {"text":"note 2"} more: true
	// page: {"text":"note 1"} more: false
	// unread: 5
	// marked read: 2 unread: 3
	// marked read again: 1
	// grace marked read: 0
	// unread page: 2 notifications
	// marked unread: 1
	// marked all read: 3 unread: 0
	// deleted: 1
	// pruned: 4
	// grace's unread: 1
	// notify: list notifications: invalid query: the limit is 500; want 1 to 100 (0 for the default, 20) true
	// notify: list notifications: invalid query: "page-2" is not a cursor: pass the cursor of the page before, or "" for the newest
	// notify: mark notifications read: invalid query: the id "42" is not a notification's (a UUID)
	// notify: delete notifications: invalid query: 1001 ids; want at most 1000 a call
	// notify: count unread notifications: the notifiable notify.OnDemand has no type or id (the database channel stores nothing for an on-demand one) false
}

// inboxNote is a notification kept in the inbox alone.
type inboxNote struct {
	Text string `json:"text"`
}

func (inboxNote) NotificationType() string                    { return "crm.note" }
func (inboxNote) Via(notify.Notifiable) []string              { return []string{notify.Database} }
func (n inboxNote) ToDatabase(notify.Notifiable) (any, error) { return n, nil }

// AlertsDelivered runs once every delivery of an alert has ended.
type AlertsDelivered struct{}

func (AlertsDelivered) JobName() string { return "ops.alerts_delivered" }

// A notification's deliveries (by mail and to the log, for two routes) as
// a batch, with a finally job.
func ExampleNotifier_Envelopes() {
	mailer, _ := mail.New(mail.Params{Config: mail.Config{Transport: mail.Memory}})
	q, _ := queue.New(queue.Params{Config: queue.Config{Driver: queue.Memory}})
	notifier, _ := notify.New(notify.Params{Dispatcher: q, Mailer: mailer, Types: []notify.Type{notify.TypeOf[OpsAlert]()}})
	q.Handle(append(notifier.Jobs(), queue.HandlerOf[AlertsDelivered](queue.HandlerFunc[AlertsDelivered](
		func(ctx context.Context, _ AlertsDelivered, jc queue.JobContext) error {
			up, err := jc.Upstream(ctx)
			fmt.Println("finally: after", len(up), "deliveries,", len(mailer.Memory().Sent()), "mail sent")
			return err
		})))...)
	ctx := context.Background()
	to := []notify.Notifiable{notify.Route(notify.Mail, "ops@example.com"), notify.Route(notify.Mail, "oncall@example.com")}
	envs, ids, err := notifier.Envelopes(to, OpsAlert{Text: "disk full"})
	if err != nil {
		panic(err)
	}
	if _, err := q.DispatchFlow(ctx, queue.Batch(queue.JobsOf(envs...)...).Finally(AlertsDelivered{})); err != nil {
		panic(err)
	}
	for {
		if stats, err := q.RunPending(ctx); err != nil || stats.Processed == 0 {
			break
		}
	}
	fmt.Println(len(ids), "notification ids")
	// Output:
	// finally: after 4 deliveries, 2 mail sent
	// 2 notification ids
}
