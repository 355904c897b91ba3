package mailtest_test

// The examples of the testing section of docs/mail.md, compiled and run.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/config"
	"github.com/navree/navree/db"
	"github.com/navree/navree/mail"
	"github.com/navree/navree/mail/mailtest"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/queuetest"
	"github.com/navree/navree/testing/apptest"
	"go.uber.org/fx"
)

// exampleT is the *testing.T an example does not have: it runs cleanups
// when the example is done and prints what a test would report.
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

var templates = fstest.MapFS{
	"mail/export-ready.txt.tmpl": {Data: []byte("Your export is ready: {{.URL}}\n")},
}

func exportReady(to string) *mail.TemplateMessage {
	return mail.Template(to, "Your export is ready", "mail/export-ready").
		With(map[string]any{"URL": "https://crm.example.com/exports/42.csv"})
}

// smtpMailer is a mailer that sends to srv over plain SMTP.
func smtpMailer(srv *mailtest.Server) *mail.Mailer {
	m, err := mail.New(mail.Params{Config: mail.Config{Transport: mail.SMTP, Host: srv.Host(), Port: srv.Port(),
		TLS: mail.NoTLS, From: "CRM <noreply@crm.example.com>"}, Templates: []fs.FS{templates}})
	if err != nil {
		panic(err)
	}
	return m
}

// A real SMTP server: what it received, and over how many connections.
func ExampleNewServer() {
	t := &exampleT{}
	defer t.done()

	srv := mailtest.NewServer(t)
	m := smtpMailer(srv)
	for _, to := range []string{"ada@example.com", "grace@example.com"} {
		if err := m.Send(context.Background(), exportReady(to)); err != nil {
			panic(err)
		}
	}
	for _, msg := range srv.Received() {
		fmt.Println(msg.Envelope.From, msg.Envelope.To, msg.Subject)
	}
	fmt.Println("connections:", srv.Connections())
	// Output:
	// noreply@crm.example.com [ada@example.com] Your export is ready
	// noreply@crm.example.com [grace@example.com] Your export is ready
	// connections: 2
}

// Refuse turns messages away: for now (4xx) or for good (5xx).
func ExampleServer_Refuse() {
	t := &exampleT{}
	defer t.done()

	srv := mailtest.NewServer(t)
	m := smtpMailer(srv)
	srv.Refuse(1, "451 4.3.0 try again later")
	var se *mail.SendError
	err := m.Send(context.Background(), exportReady("ada@example.com"))
	if errors.As(err, &se) {
		fmt.Println(se.Command, se.Code, se.Reply, "permanent:", se.Permanent)
	}
	fmt.Println("next one:", m.Send(context.Background(), exportReady("ada@example.com")))

	srv.Refuse(-1, "550 5.1.1 no such user")
	err = m.Send(context.Background(), exportReady("nobody@example.com"))
	if errors.As(err, &se) {
		fmt.Println(se.Command, se.Code, se.Reply, "permanent:", se.Permanent)
	}
	fmt.Println("received:", len(srv.Received()))
	// Output:
	// RCPT TO 451 4.3.0 try again later permanent: false
	// next one: <nil>
	// RCPT TO 550 5.1.1 no such user permanent: true
	// received: 1
}

// STARTTLS and a login, as a submission server on port 587 wants them.
func ExampleWithSTARTTLS() {
	t := &exampleT{}
	defer t.done()

	srv := mailtest.NewServer(t, mailtest.WithSTARTTLS(), mailtest.WithAuth("crm", "s3cret"))
	m, err := mail.New(mail.Params{
		Config: mail.Config{Transport: mail.SMTP, Host: srv.Host(), Port: srv.Port(), TLS: mail.STARTTLS,
			Username: "crm", Password: config.Secret("s3cret"), From: "noreply@crm.example.com"},
		TLSConfig: srv.ClientTLSConfig(), // trusts the server's certificate
	})
	if err != nil {
		panic(err)
	}
	err = m.Send(context.Background(), mail.Message{To: []string{"ada@example.com"}, Subject: "Hello", Text: "Hi Ada"})
	fmt.Println(err, len(srv.Received()))
	// Output:
	// <nil> 1
}

// AssertSent passes when a message sent through the memory transport
// matches, and reports what was sent when none does.
func ExampleAssertSent() {
	t := &exampleT{}
	m, err := mail.New(mail.Params{Config: mail.Config{Transport: mail.Memory}, Templates: []fs.FS{templates}})
	if err != nil {
		panic(err)
	}
	if err := m.Send(context.Background(), exportReady("ada@example.com")); err != nil {
		panic(err)
	}

	fmt.Println(mailtest.AssertSent(t, m, func(msg mailtest.Message) bool {
		return msg.Subject == "Your export is ready" && strings.Contains(msg.Text, "/exports/42.csv")
	}))
	fmt.Println(mailtest.AssertSent(t, m, func(msg mailtest.Message) bool { return msg.Subject == "Your invoice" }))
	fmt.Println(mailtest.AssertNothingSent(t, m))
	// Output:
	// true
	// test error: mailtest: no sent message matched; sent 1 message(s):
	// 	to ada@example.com: "Your export is ready"
	// false
	// test error: mailtest: want no message sent; sent 1 message(s):
	// 	to ada@example.com: "Your export is ready"
	// false
}

// AssertQueued and Queued read the mail.send jobs a queue fake recorded.
func ExampleAssertQueued() {
	t := &exampleT{}
	fake := queuetest.NewFake()
	m, err := mail.New(mail.Params{Config: mail.Config{Transport: mail.Memory}, Dispatcher: fake.Dispatcher(),
		Templates: []fs.FS{templates}})
	if err != nil {
		panic(err)
	}
	if _, err := m.Queue(context.Background(), exportReady("ada@example.com")); err != nil {
		panic(err)
	}

	fmt.Println(mailtest.AssertQueued(t, fake, func(msg mailtest.Message) bool {
		return msg.Envelope.To[0] == "ada@example.com"
	}))
	queued := mailtest.Queued(t, fake)
	fmt.Printf("%d queued: %q", len(queued), queued[0].Text)
	fmt.Println()
	fmt.Println(len(m.Memory().Sent()), "sent") // nothing runs the fake's jobs
	// Output:
	// true
	// 1 queued: "Your export is ready: https://crm.example.com/exports/42.csv\n"
	// 0 sent
}

// Sent parses what the memory transport sent: headers, bodies and
// attachments, with the envelope.
func ExampleSent() {
	t := &exampleT{}
	m, err := mail.New(mail.Params{Config: mail.Config{Transport: mail.Memory, From: "CRM <noreply@crm.example.com>"}})
	if err != nil {
		panic(err)
	}
	err = m.Send(context.Background(), mail.Message{To: []string{"Ada <ada@example.com>"}, Bcc: []string{"audit@example.com"},
		Subject: "Ünïcode ✓", Text: "Hi Ada", HTML: "<p>Hi Ada</p>",
		Attachments: []mail.Attachment{{Name: "notes.txt", ContentType: "text/plain", Data: []byte("notes")}}})
	if err != nil {
		panic(err)
	}

	for _, msg := range mailtest.Sent(t, m) {
		fmt.Println(msg.Envelope.To, msg.From, msg.To, msg.Subject)
		fmt.Printf("%q %q\n", msg.Text, msg.HTML)
		for _, a := range msg.Attachments {
			fmt.Printf("%s %s %q\n", a.Name, a.ContentType, a.Data)
		}
	}
	// Output:
	// [ada@example.com audit@example.com] CRM <noreply@crm.example.com> [ada@example.com] Ünïcode ✓
	// "Hi Ada" "<p>Hi Ada</p>"
	// notes.txt text/plain "notes"
}

// The test of docs/mail.md "The memory transport": the app's mailer, on
// the memory transport.
func TestDocMemoryTransport(t *testing.T) {
	var mailer *mail.Mailer
	apptest.New(t, apptest.TempDatabase(), db.Module(), queue.Module(), mail.Module(), mail.Templates(templates),
		apptest.Config(map[string]any{"mail": map[string]any{"transport": "memory"}}),
		fx.Populate(&mailer))

	if err := mailer.Send(context.Background(), exportReady("ada@example.com")); err != nil {
		t.Fatal(err)
	}

	mailtest.AssertSent(t, mailer, func(m mailtest.Message) bool {
		return m.Subject == "Your export is ready" && strings.Contains(m.Text, "/exports/42.csv")
	})
	if sent := mailtest.Sent(t, mailer); len(sent) != 1 || sent[0].Envelope.To[0] != "ada@example.com" {
		t.Fatalf("sent %+v", sent)
	}
}

// The test of docs/mail.md "Faking the queue".
func TestDocQueueFake(t *testing.T) {
	fake := queuetest.NewFake()
	var mailer *mail.Mailer
	apptest.New(t, apptest.TempDatabase(), db.Module(), queue.Module(), mail.Module(), mail.Templates(templates),
		apptest.Config(map[string]any{"mail": map[string]any{"transport": "memory"}}),
		fake.Replace(), fx.Populate(&mailer))

	if _, err := mailer.Queue(context.Background(), exportReady("ada@example.com")); err != nil {
		t.Fatal(err)
	}

	mailtest.AssertQueued(t, fake, func(m mailtest.Message) bool {
		return m.Subject == "Your export is ready" && m.Envelope.To[0] == "ada@example.com"
	})
	mailtest.AssertNothingSent(t, mailer)
}

// The test of docs/mail.md "A real SMTP server": the app's mailer sends to
// mailtest's server over STARTTLS with a login, and a 4xx is retried.
func TestDocSMTPServer(t *testing.T) {
	srv := mailtest.NewServer(t, mailtest.WithSTARTTLS(), mailtest.WithAuth("crm", "s3cret"))
	srv.Refuse(1, "451 4.3.0 try again later")
	clock := apptest.FixedClock(time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC))
	var mailer *mail.Mailer
	var q *queue.Queue
	apptest.New(t, apptest.TempDatabase(), db.Module(), queue.Module(), mail.Module(), mail.Templates(templates),
		apptest.Config(map[string]any{"mail": map[string]any{
			"transport": "smtp", "host": srv.Host(), "port": srv.Port(), "tls": "starttls",
			"username": "crm", "password": "s3cret", "from": "noreply@crm.example.com",
		}}),
		fx.Supply(fx.Annotate(srv.ClientTLSConfig(), fx.ResultTags(`name:"mail.tls"`))),
		app.WithClock(clock), fx.Populate(&mailer, &q))

	if _, err := mailer.Queue(context.Background(), exportReady("ada@example.com")); err != nil {
		t.Fatal(err)
	}
	if stats, err := q.RunPending(context.Background()); err != nil || stats.Released != 1 {
		t.Fatalf("first attempt: %+v, %v; want it released by the 451", stats, err)
	}
	clock.Advance(time.Minute) // the first retry waits a minute
	if stats, err := q.RunPending(context.Background()); err != nil || stats.Succeeded != 1 {
		t.Fatalf("second attempt: %+v, %v", stats, err)
	}
	if got := srv.Received(); len(got) != 1 || got[0].Subject != "Your export is ready" {
		t.Fatalf("received %+v", got)
	}
	if srv.Connections() != 2 {
		t.Fatalf("%d connections, want one per attempt", srv.Connections())
	}
}
