package mail_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
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
	"github.com/navree/navree/testing/apptest"
	"go.uber.org/fx"
)

// templatesFS are the example app's kind of template mail: a layout per
// folder, an HTML and a text body.
var templatesFS = fstest.MapFS{
	"mail/layout.html.tmpl":       {Data: []byte(`<html><body>{{template "content" .}}<p>The CRM team</p></body></html>`)},
	"mail/layout.txt.tmpl":        {Data: []byte("{{template \"content\" .}}\n-- \nThe CRM team\n")},
	"mail/export-ready.html.tmpl": {Data: []byte(`<p>Your export is ready: <a href="{{.URL}}">download it</a>.</p><img src="cid:logo.png">`)},
	"mail/export-ready.txt.tmpl":  {Data: []byte("Your export is ready: {{.URL}}\n")},
}

// t0 is the fixed clock's start.
var t0 = time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)

// mailApp is a test app with the queue on a real database and the mailer
// configured by settings.
type mailApp struct {
	*apptest.App
	Mailer *mail.Mailer
	Queue  *queue.Queue
	DB     *db.DB
	Clock  *apptest.Clock
}

// newApp builds the app on database (apptest.TempDatabase() or
// apptest.Postgres()) with the [mail] settings given.
func newApp(t *testing.T, database fx.Option, settings map[string]any, opts ...fx.Option) *mailApp {
	t.Helper()
	a := &mailApp{Clock: apptest.FixedClock(t0)}
	a.App = apptest.New(t, append([]fx.Option{
		database, db.Module(), queue.Module(), mail.Module(), mail.Templates(templatesFS),
		apptest.Config(map[string]any{"mail": settings}), app.WithClock(a.Clock),
		fx.Populate(&a.Mailer, &a.Queue, &a.DB),
	}, opts...)...)
	return a
}

// databases are the real queues the mail tests run on.
func eachDatabase(t *testing.T, f func(t *testing.T, database fx.Option)) {
	t.Run("sqlite", func(t *testing.T) { f(t, apptest.TempDatabase()) })
	t.Run("postgres", func(t *testing.T) { f(t, apptest.Postgres()) })
}

// smtpTo is the [mail] section of the smtp transport to srv.
func smtpTo(srv *mailtest.Server) map[string]any {
	return map[string]any{"transport": "smtp", "host": srv.Host(), "port": srv.Port(), "tls": "none",
		"from": "CRM <noreply@crm.example.com>"}
}

func exportReady() *mail.TemplateMessage {
	msg := mail.Template("ada@example.com", "Your export is ready", "mail/export-ready").
		With(map[string]any{"URL": "https://crm.example.com/exports/42.csv"})
	msg.Cc = []string{"Grace Hopper <grace@example.com>"}
	msg.Bcc = []string{"audit@example.com"}
	msg.ReplyTo = "support@crm.example.com"
	msg.Headers = map[string]string{"X-Entity-Ref-ID": "export-42"}
	msg.Attachments = []mail.Attachment{
		{Name: "contacts.csv", Data: []byte("name,email\nAda,ada@example.com\n")},
		{Name: "logo.png", ContentType: "image/png", Data: []byte("\x89PNG\r\n\x1a\nlogo"), Inline: true},
	}
	return msg
}

// storedMail is the mail.send payload of job id, as the jobs table holds it.
func storedMail(t *testing.T, a *mailApp, id string) mail.SendJob {
	t.Helper()
	var payload string
	if err := a.DB.NewSelect().Table("jobs").Column("payload").Where("id = ?", id).Scan(context.Background(), &payload); err != nil {
		t.Fatal(err)
	}
	var queued mail.SendJob
	if err := json.Unmarshal([]byte(payload), &queued); err != nil || queued.V != 1 || queued.Raw == "" {
		t.Fatalf("the stored mail.send payload %.200s does not decode (%v)", payload, err)
	}
	return queued
}

func run(t *testing.T, q *queue.Queue) queue.WorkStats {
	t.Helper()
	stats, err := q.RunPending(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return stats
}

func TestQueuedTemplateMailArrivesOverSMTP(t *testing.T) {
	eachDatabase(t, func(t *testing.T, database fx.Option) {
		srv := mailtest.NewServer(t)
		a := newApp(t, database, smtpTo(srv))
		id, err := a.Mailer.Queue(context.Background(), exportReady())
		if err != nil {
			t.Fatal(err)
		}
		if id == "" || len(srv.Received()) != 0 {
			t.Fatalf("Queue sent the mail before a worker ran (id %q)", id)
		}
		queued := storedMail(t, a, id)
		if stats := run(t, a.Queue); stats.Succeeded != 1 {
			t.Fatalf("RunPending = %+v, want the mail.send job to succeed", stats)
		}
		got := srv.Received()
		if len(got) != 1 {
			t.Fatalf("the server received %d messages, want 1", len(got))
		}
		m := got[0]
		if string(m.Raw) != queued.Raw {
			t.Errorf("the server received other bytes than were queued:\n%s\nqueued:\n%s", m.Raw, queued.Raw)
		}
		wantRcpt := []string{"ada@example.com", "grace@example.com", "audit@example.com"}
		if m.Envelope.From != "noreply@crm.example.com" || strings.Join(m.Envelope.To, " ") != strings.Join(wantRcpt, " ") {
			t.Errorf("envelope = %+v, want from noreply@crm.example.com to %v", m.Envelope, wantRcpt)
		}
		if m.From != "CRM <noreply@crm.example.com>" || strings.Join(m.To, ",") != "ada@example.com" ||
			strings.Join(m.Cc, ",") != "grace@example.com" || m.ReplyTo != "support@crm.example.com" {
			t.Errorf("headers From %q To %v Cc %v Reply-To %q", m.From, m.To, m.Cc, m.ReplyTo)
		}
		if _, bcc := m.Header["Bcc"]; bcc {
			t.Errorf("the Bcc header was sent: %v", m.Header["Bcc"])
		}
		if m.Subject != "Your export is ready" || m.Header.Get("X-Entity-Ref-ID") != "export-42" {
			t.Errorf("Subject %q, X-Entity-Ref-ID %q", m.Subject, m.Header.Get("X-Entity-Ref-ID"))
		}
		if !strings.HasPrefix(m.MessageID, "<") || !strings.HasSuffix(m.MessageID, "@crm.example.com>") {
			t.Errorf("Message-ID %q is not from the from domain", m.MessageID)
		}
		if date, _ := m.Header.Date(); !date.Equal(t0) {
			t.Errorf("Date %v, want the app clock's %v", date, t0)
		}
		if want := "Your export is ready: https://crm.example.com/exports/42.csv\n\n-- \nThe CRM team\n"; m.Text != want {
			t.Errorf("text part %q, want %q", m.Text, want)
		}
		if want := `<html><body><p>Your export is ready: <a href="https://crm.example.com/exports/42.csv">download it</a>.</p><img src="cid:logo.png"><p>The CRM team</p></body></html>`; m.HTML != want {
			t.Errorf("HTML part %q, want %q", m.HTML, want)
		}
		if len(m.Attachments) != 2 {
			t.Fatalf("attachments %+v, want contacts.csv and logo.png", m.Attachments)
		}
		for _, want := range []mailtest.Attachment{
			{Name: "contacts.csv", ContentType: "text/csv", Data: []byte("name,email\nAda,ada@example.com\n")},
			{Name: "logo.png", ContentType: "image/png", ContentID: "logo.png", Inline: true, Data: []byte("\x89PNG\r\n\x1a\nlogo")},
		} {
			found := false
			for _, got := range m.Attachments {
				found = found || (got.Name == want.Name && got.ContentType == want.ContentType && got.Inline == want.Inline &&
					got.ContentID == want.ContentID && string(got.Data) == string(want.Data))
			}
			if !found {
				t.Errorf("no attachment %+v in %+v", want, m.Attachments)
			}
		}
	})
}

func TestTemporaryRefusalIsRetried(t *testing.T) {
	eachDatabase(t, func(t *testing.T, database fx.Option) {
		srv := mailtest.NewServer(t)
		srv.Refuse(1, "451 4.3.0 try again later")
		a := newApp(t, database, smtpTo(srv))
		if _, err := a.Mailer.Queue(context.Background(), exportReady()); err != nil {
			t.Fatal(err)
		}
		if stats := run(t, a.Queue); stats.Released != 1 || stats.Failed != 0 {
			t.Fatalf("first attempt: %+v, want it released for a retry", stats)
		}
		if !strings.Contains(a.Logs(), `451 4.3.0 try again later`) {
			t.Errorf("the attempt's log does not give the server's reply:\n%s", a.Logs())
		}
		if stats := run(t, a.Queue); stats.Processed != 0 {
			t.Fatalf("the retry ran before its backoff: %+v", stats)
		}
		a.Clock.Advance(time.Minute)
		if stats := run(t, a.Queue); stats.Succeeded != 1 {
			t.Fatalf("second attempt: %+v, want it to succeed", stats)
		}
		if got := srv.Received(); len(got) != 1 || got[0].Subject != "Your export is ready" {
			t.Fatalf("received %d messages, want the export mail once", len(got))
		}
	})
}

func TestPermanentRefusalFailsAtOnceAndRetrySendsIt(t *testing.T) {
	eachDatabase(t, func(t *testing.T, database fx.Option) {
		srv := mailtest.NewServer(t)
		srv.Refuse(-1, "550 5.1.1 no such user")
		a := newApp(t, database, smtpTo(srv))
		id, err := a.Mailer.Queue(context.Background(), exportReady())
		if err != nil {
			t.Fatal(err)
		}
		if stats := run(t, a.Queue); stats.Failed != 1 {
			t.Fatalf("RunPending = %+v, want the job failed at its first attempt", stats)
		}
		failed, err := a.RunCommand("queue:failed")
		if err != nil {
			t.Fatal(err)
		}
		want := "mail: smtp " + srv.Addr() + " refused the message permanently at RCPT TO: 550 5.1.1 no such user"
		if !strings.Contains(failed, id) || !strings.Contains(failed, want) || !strings.Contains(failed, "mail.send") {
			t.Fatalf("queue:failed does not show job %s with %q:\n%s", id, want, failed)
		}
		srv.Refuse(0, "")
		if out, err := a.RunCommand("queue:retry", id); err != nil {
			t.Fatalf("queue:retry: %v\n%s", err, out)
		}
		if stats := run(t, a.Queue); stats.Succeeded != 1 {
			t.Fatalf("after queue:retry: %+v, want the mail sent", stats)
		}
		if len(srv.Received()) != 1 {
			t.Fatalf("received %d messages after the retry, want 1", len(srv.Received()))
		}
	})
}

// deadAddr is a loopback port nothing listens on.
func deadAddr(t *testing.T) (string, int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().(*net.TCPAddr)
	ln.Close()
	return addr.IP.String(), addr.Port
}

func TestDeadServerIsAnErrorNamingHostPortAndIsRetried(t *testing.T) {
	eachDatabase(t, func(t *testing.T, database fx.Option) {
		host, port := deadAddr(t)
		a := newApp(t, database, map[string]any{"transport": "smtp", "host": host, "port": port, "tls": "none", "from": "noreply@crm.example.com"})
		err := a.Mailer.Send(context.Background(), exportReady())
		addr := net.JoinHostPort(host, strconv.Itoa(port))
		if err == nil || !strings.Contains(err.Error(), "mail: smtp "+addr+": connect: ") || !strings.Contains(err.Error(), "connection refused") {
			t.Fatalf("Send to a dead server: %v, want an error naming %s", err, addr)
		}
		if _, err := a.Mailer.Queue(context.Background(), exportReady()); err != nil {
			t.Fatal(err)
		}
		if stats := run(t, a.Queue); stats.Released != 1 {
			t.Fatalf("RunPending = %+v, want the attempt released for a retry", stats)
		}
	})
}

func TestFailoverToTheNextTransport(t *testing.T) {
	eachDatabase(t, func(t *testing.T, database fx.Option) {
		host, port := deadAddr(t)
		a := newApp(t, database, map[string]any{"transport": "smtp", "host": host, "port": port, "tls": "none",
			"from": "noreply@crm.example.com", "failover": []any{"memory"}})
		id, err := a.Mailer.Queue(context.Background(), exportReady())
		if err != nil {
			t.Fatal(err)
		}
		queued := storedMail(t, a, id)
		if stats := run(t, a.Queue); stats.Succeeded != 1 {
			t.Fatalf("RunPending = %+v, want the mail sent through the failover", stats)
		}
		if n, err := a.Queue.Inspector().PendingCount(context.Background(), "default"); err != nil || n != 0 {
			t.Fatalf("%d jobs left (%v), want none", n, err)
		}
		sent := a.Mailer.Memory().Sent()
		if len(sent) != 1 || string(sent[0].Raw) != queued.Raw {
			t.Fatalf("the memory failover has %d messages, want the bytes of job %s", len(sent), id)
		}
		if !strings.Contains(a.Logs(), "mail sent through a failover transport") || !strings.Contains(a.Logs(), "transport=memory") {
			t.Errorf("the failover is not logged:\n%s", a.Logs())
		}
	})
}

func TestFailoverSendsTheSameBytesAndNotAfterAPermanentRefusal(t *testing.T) {
	srv := mailtest.NewServer(t)
	settings := smtpTo(srv)
	settings["failover"] = "memory"
	a := newApp(t, apptest.TempDatabase(), settings)

	srv.Refuse(1, "421 4.7.0 too busy, come back later")
	msg := mail.Message{To: []string{"ada@example.com"}, Subject: "Hello", Text: "Hi Ada"}
	if err := a.Mailer.Send(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
	if n := len(a.Mailer.Memory().Sent()); n != 1 {
		t.Fatalf("after a 421, the memory failover has %d messages, want 1", n)
	}

	srv.Refuse(1, "550 5.1.1 no such user")
	err := a.Mailer.Send(context.Background(), msg)
	var se *mail.SendError
	if !errors.As(err, &se) || !se.Permanent || se.Code != 550 || se.Reply != "5.1.1 no such user" || se.Command != "RCPT TO" {
		t.Fatalf("Send after a 550: %v (%#v), want a permanent *mail.SendError", err, se)
	}
	if n := len(a.Mailer.Memory().Sent()); n != 1 {
		t.Fatalf("a permanent refusal failed over: the memory transport has %d messages", n)
	}
}

func TestRolledBackWorkSendsNothing(t *testing.T) {
	eachDatabase(t, func(t *testing.T, database fx.Option) {
		srv := mailtest.NewServer(t)
		var mailer *mail.Mailer
		route := app.Routes(app.Route{Pattern: "POST /exports", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, err := mailer.Queue(r.Context(), exportReady()); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			http.Error(w, "the export is invalid", http.StatusUnprocessableEntity)
		})})
		a := newApp(t, database, smtpTo(srv), route)
		mailer = a.Mailer
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, httptest.NewRequest("POST", "/exports", nil))
		if rec.Code != http.StatusUnprocessableEntity {
			t.Fatalf("POST /exports = %d %s", rec.Code, rec.Body)
		}
		err := a.DB.Transaction(context.Background(), func(ctx context.Context) error {
			if _, err := a.Mailer.Queue(ctx, exportReady()); err != nil {
				return err
			}
			return errors.New("the export failed")
		})
		if err == nil {
			t.Fatal("the transaction did not fail")
		}
		if stats := run(t, a.Queue); stats.Processed != 0 {
			t.Fatalf("RunPending = %+v: a rolled-back unit of work queued mail", stats)
		}
		if n, err := a.Queue.Inspector().PendingCount(context.Background(), "default"); err != nil || n != 0 || len(srv.Received()) != 0 {
			t.Fatalf("%d jobs pending, %d messages received; want none", n, len(srv.Received()))
		}
	})
}

func TestEachSendConnectsAfresh(t *testing.T) {
	srv := mailtest.NewServer(t)
	a := newApp(t, apptest.TempDatabase(), smtpTo(srv))
	for i := range 3 {
		if err := a.Mailer.Send(context.Background(), mail.Message{To: []string{"ada@example.com"}, Subject: fmt.Sprint("n", i), Text: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	if got := srv.Connections(); got != 3 {
		t.Fatalf("3 sends made %d connections, want one each", got)
	}
}

func TestSTARTTLSWithLoginAndThePasswordNeverShown(t *testing.T) {
	const password = "hunter2-s3cret-pw"
	srv := mailtest.NewServer(t, mailtest.WithSTARTTLS(), mailtest.WithAuth("crm", password))
	settings := smtpTo(srv)
	settings["tls"], settings["username"], settings["password"] = "starttls", "crm", password
	tlsConfig := fx.Supply(fx.Annotate(srv.ClientTLSConfig(), fx.ResultTags(`name:"mail.tls"`)))
	a := newApp(t, apptest.TempDatabase(), settings, tlsConfig)
	if err := a.Mailer.Send(context.Background(), exportReady()); err != nil {
		t.Fatal(err)
	}
	if got := srv.Received(); len(got) != 1 {
		t.Fatalf("received %d messages over STARTTLS, want 1", len(got))
	}

	// A wrong password: the error and the logs of a queued send show the
	// server's refusal, never the password given.
	settings["password"] = password + "-wrong"
	b := newApp(t, apptest.TempDatabase(), settings, tlsConfig)
	err := b.Mailer.Send(context.Background(), exportReady())
	if err == nil || !strings.Contains(err.Error(), "535") {
		t.Fatalf("Send with a wrong password: %v, want the server's 535", err)
	}
	if _, err := b.Mailer.Queue(context.Background(), exportReady()); err != nil {
		t.Fatal(err)
	}
	run(t, b.Queue)
	failed, _ := b.RunCommand("queue:failed")
	for what, text := range map[string]string{"the error": err.Error(), "the logs": b.Logs(), "queue:failed": failed,
		"the config": fmt.Sprintf("%+v %#v", mail.Config{Password: password}, mail.Config{Password: password})} {
		if strings.Contains(text, "hunter2") {
			t.Errorf("%s shows the password: %s", what, text)
		}
	}
}

func TestImplicitTLS(t *testing.T) {
	srv := mailtest.NewServer(t, mailtest.WithTLS())
	settings := smtpTo(srv)
	settings["tls"] = "tls"
	a := newApp(t, apptest.TempDatabase(), settings, fx.Supply(fx.Annotate(srv.ClientTLSConfig(), fx.ResultTags(`name:"mail.tls"`))))
	if err := a.Mailer.Send(context.Background(), exportReady()); err != nil {
		t.Fatal(err)
	}
	if got := srv.Received(); len(got) != 1 {
		t.Fatalf("received %d messages over TLS, want 1", len(got))
	}
	settings["tls"], settings["timeout"] = "none", "500ms" // plain text to a TLS server: no greeting comes
	b := newApp(t, apptest.TempDatabase(), settings)
	if err := b.Mailer.Send(context.Background(), exportReady()); err == nil || !strings.Contains(err.Error(), "mail: smtp "+srv.Addr()+": connect: ") {
		t.Fatalf("plain text to a TLS server: %v", err)
	}
}

// TestTheLogTransportShowsTheMailInDevelopment: in development (as in
// apptest) the log transport's one line per message holds its
// recipients and its text body, decoded, as the worker sends it queued;
// never its attachments.
func TestTheLogTransportShowsTheMailInDevelopment(t *testing.T) {
	a := newApp(t, apptest.TempDatabase(), map[string]any{"transport": "log"})
	if _, err := a.Mailer.Queue(context.Background(), exportReady()); err != nil {
		t.Fatal(err)
	}
	if stats := run(t, a.Queue); stats.Succeeded != 1 {
		t.Fatalf("RunPending = %v", stats)
	}
	lines := mailLines(a.Logs())
	if len(lines) != 1 {
		t.Fatalf("the log transport wrote %d lines, want 1:\n%s", len(lines), a.Logs())
	}
	line := regexp.MustCompile(`bytes=\d+ message_id=<[^>]+>`).ReplaceAllString(lines[0], "bytes=N message_id=<ID>")
	want := `level=INFO msg="mail not sent: the log transport logs it instead" logger=navree.mail recipients=3 subject="Your export is ready" bytes=N message_id=<ID>` +
		` to="ada@example.com, grace@example.com, audit@example.com" text="Your export is ready: https://crm.example.com/exports/42.csv\n\n-- \nThe CRM team\n"`
	if line != want {
		t.Fatalf("the log transport wrote\n%s\nwant\n%s", line, want)
	}
	if strings.Contains(a.Logs(), "Ada,") {
		t.Errorf("the logs show the attachment:\n%s", a.Logs())
	}
}

// mailLines are the lines of logs logged by mail, without their time.
func mailLines(logs string) []string {
	var lines []string
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "logger=navree.mail") {
			lines = append(lines, regexp.MustCompile(`^time=\S+ `).ReplaceAllString(line, ""))
		}
	}
	return lines
}

// TestTheLogTransportKeepsCountsOutsideDevelopment: with APP_ENV naming
// another environment, or no config to tell, the log transport logs the
// recipient count, subject, size and Message-ID, never an address or the
// body; with no APP_ENV or APP_ENV=development, the recipients and the
// text body too.
func TestTheLogTransportKeepsCountsOutsideDevelopment(t *testing.T) {
	dir := t.TempDir()
	for _, env := range []string{"production", "staging", "development", "", "no config"} {
		if env != "" && env != "no config" {
			if err := os.WriteFile(filepath.Join(dir, "app."+env+".toml"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		opts := []fx.Option{config.Module(config.Sources{Dir: dir, Env: env}), queue.ModuleWith(queue.Config{Driver: queue.Memory}), mail.Module()}
		if env == "no config" {
			opts = []fx.Option{queue.ModuleWith(queue.Config{Driver: queue.Memory}), mail.ModuleWith(mail.Config{})}
		}
		var out bytes.Buffer
		a := app.New(opts...)
		a.Name, a.Stdout, a.Stderr = "crm", &out, &out
		if err := a.Run(context.Background(), []string{"mail:test", "ada@example.com"}); err != nil {
			t.Fatalf("APP_ENV=%s: %v\n%s", env, err, out.String())
		}
		lines := mailLines(out.String())
		want := `level=INFO msg="mail not sent: the log transport logs it instead" logger=navree.mail recipients=1 subject="Test message from crm" bytes=N message_id=<ID>`
		if env == "development" || env == "" {
			want += ` to=ada@example.com text="This is a test message from crm, sent by mail:test.\n\nIf you can read it, mail works.\n"`
		}
		if len(lines) != 1 || regexp.MustCompile(`bytes=\d+ message_id=<[^>]+>`).ReplaceAllString(lines[0], "bytes=N message_id=<ID>") != want {
			t.Errorf("APP_ENV=%s: the log transport wrote\n%s\nwant\n%s", env, strings.Join(lines, "\n"), want)
		}
	}
}

// TestWithoutFx: the Mailer is built on the queue, and the queue is given
// its mail.send job; a Mailer without a Dispatcher sends but cannot queue.
func TestWithoutFx(t *testing.T) {
	cfg := mail.Config{Transport: mail.Memory, From: "noreply@crm.example.com"}
	q, err := queue.New(queue.Params{Config: queue.Config{Driver: queue.Memory}})
	if err != nil {
		t.Fatal(err)
	}
	mailer, err := mail.New(mail.Params{Config: cfg, Dispatcher: q})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mailer.Queue(context.Background(), mail.Message{To: []string{"ada@example.com"}, Subject: "Hello", Text: "Hi"}); err == nil ||
		!strings.HasPrefix(err.Error(), `queue: unknown job "mail.send"`) {
		t.Fatalf("Queue before the queue has mail.send: %v", err)
	}
	if err := q.Handle(mailer.Jobs()...); err != nil {
		t.Fatal(err)
	}
	if _, err := mailer.Queue(context.Background(), mail.Message{To: []string{"ada@example.com"}, Subject: "Hello", Text: "Hi"}); err != nil {
		t.Fatal(err)
	}
	if stats := run(t, q); stats.Succeeded != 1 {
		t.Fatalf("RunPending = %+v", stats)
	}
	mailtest.AssertSent(t, mailer, func(m mailtest.Message) bool { return m.Subject == "Hello" })

	sending, err := mail.New(mail.Params{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sending.Queue(context.Background(), mail.Message{To: []string{"ada@example.com"}, Subject: "x", Text: "y"}); err == nil ||
		err.Error() != "mail: this Mailer has no queue: build it with Params.Dispatcher to queue mail" {
		t.Fatalf("Queue without a Dispatcher: %v", err)
	}
}

// TestIsPermanent: what sending again cannot mend is permanent (notify's
// mail channel and mail.send fail their job at once on it), wrapped or
// not; a refusal for now, a dead server or nil is not.
func TestIsPermanent(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{&mail.SendError{Transport: "smtp", Command: "RCPT TO", Code: 550, Reply: "5.1.1 no such user", Permanent: true}, true},
		{fmt.Errorf("deliver: %w", &mail.SendError{Code: 554, Permanent: true}), true},
		{&mail.SendError{Transport: "smtp", Command: "DATA", Code: 451, Reply: "4.3.0 try again later"}, false},
		{fmt.Errorf("mail: no recipient: %w", mail.ErrInvalidMessage), true},
		{fmt.Errorf("mail: %w: mail/welcome", mail.ErrNoTemplate), true},
		{fmt.Errorf("mail: %w", mail.ErrRender), true},
		{errors.New("mail: smtp localhost:25: connect: connection refused"), false},
		{nil, false},
	} {
		if got := mail.IsPermanent(tt.err); got != tt.want {
			t.Errorf("IsPermanent(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
