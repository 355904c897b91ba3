package mail_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/navree/navree/app"
	"github.com/navree/navree/config"
	"github.com/navree/navree/mail"
	"github.com/navree/navree/mail/mailtest"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/testing/apptest"
	"go.uber.org/fx"
)

// messageID matches the Message-ID in what a command printed.
var messageID = regexp.MustCompile(`<[0-9a-f-]{36}@[a-z.]+>`)

func TestMailTestSendsThroughTheConfiguredTransport(t *testing.T) {
	srv := mailtest.NewServer(t)
	a := newApp(t, apptest.TempDatabase(), smtpTo(srv))
	out, err := a.RunCommand("mail:test", "you@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := messageID.ReplaceAllString(out, "<ID>"), "Sent a test message to you@example.com through smtp "+srv.Addr()+" (Message-ID <ID>).\n"; got != want {
		t.Fatalf("mail:test printed %q, want %q", got, want)
	}
	got := srv.Received()
	if len(got) != 1 || got[0].Subject != "Test message from app" || strings.Join(got[0].Envelope.To, ",") != "you@example.com" ||
		!strings.Contains(out, got[0].MessageID) {
		t.Fatalf("the server received %+v", got)
	}

	logged := newApp(t, apptest.TempDatabase(), map[string]any{"transport": "log"})
	out, err = logged.RunCommand("mail:test", "you@example.com")
	if err != nil {
		t.Fatal(err)
	}
	want := "Sent a test message to you@example.com through log (Message-ID <ID>).\n" +
		"The log transport delivers nothing: set [mail] transport = \"smtp\" and its host to send real mail.\n"
	if got := messageID.ReplaceAllString(out, "<ID>"); got != want {
		t.Fatalf("mail:test on the log transport printed %q, want %q", got, want)
	}

	srv.Refuse(1, "550 5.7.1 relaying denied")
	if _, err := a.RunCommand("mail:test", "you@example.com"); err == nil ||
		err.Error() != "mail: smtp "+srv.Addr()+" refused the message permanently at RCPT TO: 550 5.7.1 relaying denied" {
		t.Fatalf("mail:test refused: %v", err)
	}
	if _, err := a.RunCommand("mail:test"); err == nil || !strings.Contains(err.Error(), "mail:test takes one argument, the address to send to") {
		t.Fatalf("mail:test without an address: %v", err)
	}
	if _, err := a.RunCommand("mail:test", "you"); !errors.Is(err, mail.ErrInvalidMessage) {
		t.Fatalf("mail:test you: %v", err)
	}
}

// previews are the example app's kind of previews.
var previews = mail.Previews(
	mail.Preview{Name: "export-ready", Func: func(context.Context) (mail.Mail, error) { return exportReady(), nil }},
	mail.Preview{Name: "welcome", Func: func(context.Context) (mail.Mail, error) {
		return mail.Message{To: []string{"ada@example.com"}, Subject: "Welcome", Text: "Hello Ada"}, nil
	}},
)

func TestMailPreviewPrintsOrWritesAnEML(t *testing.T) {
	a := newApp(t, apptest.TempDatabase(), map[string]any{"transport": "memory", "from": "CRM <noreply@crm.example.com>"}, previews)
	out, err := a.RunCommand("mail:preview")
	if err != nil || out != "export-ready\nwelcome\n" {
		t.Fatalf("mail:preview listed %q (%v)", out, err)
	}
	out, err = a.RunCommand("mail:preview", "export-ready")
	if err != nil {
		t.Fatal(err)
	}
	want := `From:       CRM <noreply@crm.example.com>
Reply-To:   support@crm.example.com
To:         ada@example.com
Cc:         Grace Hopper <grace@example.com>
Bcc:        audit@example.com
Subject:    Your export is ready
Message-ID: <ID>
Attachment: contacts.csv (text/csv; charset=utf-8, 31 bytes, attachment)
Attachment: logo.png (image/png, 12 bytes, inline)

--- text ---
Your export is ready: https://crm.example.com/exports/42.csv

-- 
The CRM team

--- html ---
<html><body><p>Your export is ready: <a href="https://crm.example.com/exports/42.csv">download it</a>.</p><img src="cid:logo.png"><p>The CRM team</p></body></html>
`
	if got := messageID.ReplaceAllString(out, "<ID>"); got != want {
		t.Fatalf("mail:preview export-ready printed:\n%s\nwant:\n%s", got, want)
	}

	file := filepath.Join(t.TempDir(), "export.eml")
	out, err = a.RunCommand("mail:preview", "export-ready", "--eml", file)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if want := "Wrote the preview export-ready to " + file + " ("; !strings.HasPrefix(out, want) {
		t.Fatalf("mail:preview --eml printed %q, want %q…", out, want)
	}
	msg, err := mailtest.Parse(raw)
	if err != nil || msg.Subject != "Your export is ready" || len(msg.Attachments) != 2 {
		t.Fatalf("the .eml parses to %+v (%v)", msg, err)
	}
	mailtest.AssertNothingSent(t, a.Mailer)

	if _, err := a.RunCommand("mail:preview", "export-redy"); err == nil || err.Error() != `mail: no preview "export-redy"; did you mean export-ready?` {
		t.Fatalf("a misspelt preview: %v", err)
	}
	if _, err := a.RunCommand("mail:preview", "invoice"); err == nil || err.Error() != `mail: no preview "invoice"; there are export-ready, welcome` {
		t.Fatalf("an unknown preview: %v", err)
	}
}

func TestServeShowsPreviewsInDevelopment(t *testing.T) {
	a := newApp(t, apptest.TempDatabase(), map[string]any{"transport": "memory"}, previews)
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec
	}
	if rec := get("/mail/previews"); rec.Code != 200 || !strings.Contains(rec.Body.String(), `<a href="/mail/previews/export-ready">export-ready</a>`) {
		t.Fatalf("GET /mail/previews = %d\n%s", rec.Code, rec.Body)
	}
	rec := get("/mail/previews/export-ready")
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `<td id="subject">Your export is ready</td>`) ||
		!strings.Contains(rec.Body.String(), `<iframe id="html" title="HTML body" sandbox src="/mail/previews/export-ready/html">`) ||
		!strings.Contains(rec.Body.String(), "<pre id=\"text\">Your export is ready: https://crm.example.com/exports/42.csv\n") {
		t.Fatalf("GET /mail/previews/export-ready = %d\n%s", rec.Code, rec.Body)
	}
	if rec := get("/mail/previews/export-ready/html"); rec.Code != 200 || !strings.HasPrefix(rec.Body.String(), "<html><body><p>Your export is ready") ||
		rec.Header().Get("Content-Security-Policy") != "sandbox" {
		t.Fatalf("GET …/html = %d %v\n%s", rec.Code, rec.Header(), rec.Body)
	}
	rec = get("/mail/previews/welcome/eml")
	if msg, err := mailtest.Parse(rec.Body.Bytes()); rec.Code != 200 || err != nil || msg.Text != "Hello Ada" ||
		rec.Header().Get("Content-Disposition") != "attachment; filename=welcome.eml" {
		t.Fatalf("GET …/eml = %d %v: %+v %v", rec.Code, rec.Header(), msg, err)
	}
	if rec := get("/mail/previews/nope"); rec.Code != 404 || !strings.Contains(rec.Body.String(), `no mail preview "nope"`) {
		t.Fatalf("GET an unknown preview = %d %s", rec.Code, rec.Body)
	}
	mailtest.AssertNothingSent(t, a.Mailer)
}

func TestServeHidesPreviewsInProduction(t *testing.T) {
	dir := t.TempDir()
	for _, env := range []string{"production", "development"} {
		if err := os.WriteFile(filepath.Join(dir, "app."+env+".toml"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		var h struct {
			fx.In
			Routes []app.Route `group:"app.routes"`
		}
		a := app.New(config.Module(config.Sources{Dir: dir, Env: env}), queue.ModuleWith(queue.Config{Driver: queue.Memory}), mail.Module(), previews)
		if _, err := a.Build(fx.Populate(&h)); err != nil {
			t.Fatal(err)
		}
		handler, err := app.NewHandler(h.Routes, nil)
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, httptest.NewRequest("GET", "/mail/previews/welcome", nil))
		if want := map[string]int{"production": http.StatusNotFound, "development": http.StatusOK}[env]; rec.Code != want {
			t.Errorf("APP_ENV=%s: GET /mail/previews/welcome = %d, want %d", env, rec.Code, want)
		}
	}
}
