package mail_test

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/navree/navree/app"
	"github.com/navree/navree/config"
	"github.com/navree/navree/mail"
	"github.com/navree/navree/mail/mailtest"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/queuetest"
	"go.uber.org/fx"
)

// boot builds the mailer of the [mail] settings and templates as an app
// would, through the config and fx, and returns its error.
func boot(t *testing.T, environ []string, templates fstest.MapFS) error {
	t.Helper()
	a := app.New(config.Module(config.Sources{Environ: environ}), queue.ModuleWith(queue.Config{Driver: queue.Memory}),
		mail.Module(), mail.Templates(templates))
	_, err := a.Build(fx.Populate(new(*mail.Mailer)))
	return err
}

func TestInvalidConfigFailsTheBoot(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		want    string
	}{
		{"transport", []string{"APP_MAIL__TRANSPORT=smpt"},
			`config: invalid value for mail.transport: "smpt" (from env APP_MAIL__TRANSPORT); allowed: one of smtp, log, memory`},
		{"tls", []string{"APP_MAIL__TLS=ssl"},
			`config: invalid value for mail.tls: "ssl" (from env APP_MAIL__TLS); allowed: one of starttls, tls, none`},
		{"port", []string{"APP_MAIL__PORT=70000"},
			`config: invalid value for mail.port: "70000" (from env APP_MAIL__PORT); allowed: at least 0, at most 65535`},
		{"timeout", []string{"APP_MAIL__TIMEOUT=0s"},
			`config: invalid value for mail.timeout: "0s" (from env APP_MAIL__TIMEOUT); allowed: a duration above zero, such as 15s`},
		{"from", []string{"APP_MAIL__FROM=CRM noreply"},
			`config: invalid value for mail.from: "CRM noreply" (from env APP_MAIL__FROM); allowed: an address such as "CRM <noreply@crm.example.com>"`},
		{"failover unknown", []string{"APP_MAIL__FAILOVER=log,sendmail"},
			`config: invalid value for mail.failover: "log,sendmail" (from env APP_MAIL__FAILOVER); allowed: one of smtp, log, memory`},
		{"failover repeats", []string{"APP_MAIL__FAILOVER=log"},
			`config: invalid value for mail.failover: "log" (from env APP_MAIL__FAILOVER); allowed: transports tried after mail.transport (log), each once`},
		{"smtp without host", []string{"APP_MAIL__TRANSPORT=smtp", "APP_MAIL__FROM=noreply@crm.example.com"},
			`config: invalid value for mail.host: "" (from default); allowed: the SMTP server's host name, which the smtp transport needs`},
		{"smtp without from", []string{"APP_MAIL__TRANSPORT=smtp", "APP_MAIL__HOST=mail.example.com"},
			`config: invalid value for mail.from: "" (from default); allowed: the sender of messages that name none, such as "CRM <noreply@crm.example.com>", which the smtp transport needs`},
		{"queue", []string{"APP_MAIL__QUEUE=mail,sms"},
			`config: invalid value for mail.queue: "mail,sms" (from env APP_MAIL__QUEUE); allowed: empty for the default queue, or a queue name of 1 to 100 ASCII letters, digits, '-', '_', '.' or ':'`},
		{"login without tls", []string{"APP_MAIL__TRANSPORT=smtp", "APP_MAIL__HOST=mail.example.com", "APP_MAIL__FROM=noreply@crm.example.com",
			"APP_MAIL__USERNAME=crm", "APP_MAIL__PASSWORD=hunter2", "APP_MAIL__TLS=none"},
			`config: invalid value for mail.tls: "none" (from env APP_MAIL__TLS); allowed: starttls or tls with a username: a login over tls = "none" would send the password in plain text`},
		{"misspelt key", []string{"APP_MAIL__PASWORD=hunter2"},
			`config: unknown key mail.pasword = "xxxxx" (from env APP_MAIL__PASWORD): did you mean password?`},
		{"password in a bad port", []string{"APP_MAIL__PASSWORD=hunter2", "APP_MAIL__PORT=x"},
			`config: invalid value for mail.port: "x" (from env APP_MAIL__PORT); allowed: a whole number`},
		{"send_timeout", []string{"APP_MAIL__SEND_TIMEOUT=-1s"},
			`config: invalid value for mail.send_timeout: "-1s" (from env APP_MAIL__SEND_TIMEOUT); allowed: a duration above zero, such as 1m`},
		{"helo", []string{"APP_MAIL__HELO=ws 12"},
			`config: invalid value for mail.helo: "ws 12" (from env APP_MAIL__HELO); allowed: a fully qualified domain name, such as "crm.example.com", or an address literal, such as "[192.0.2.10]"; empty for the domain of mail.from`},
		{"tls_ca_file missing", []string{"APP_MAIL__TLS_CA_FILE=/nonexistent/ca.pem"},
			`config: invalid value for mail.tls_ca_file: "/nonexistent/ca.pem" (from env APP_MAIL__TLS_CA_FILE); allowed: a PEM file of the certificate authority that signed the SMTP server's certificate (open /nonexistent/ca.pem: no such file or directory)`},
		{"tls_ca_file without a certificate", []string{"APP_MAIL__TLS_CA_FILE=boot_test.go"},
			`config: invalid value for mail.tls_ca_file: "boot_test.go" (from env APP_MAIL__TLS_CA_FILE); allowed: a PEM file of the certificate authority that signed the SMTP server's certificate (it holds no PEM certificate)`},
		{"tls_server_name", []string{"APP_MAIL__TLS_SERVER_NAME=smtp internal"},
			`config: invalid value for mail.tls_server_name: "smtp internal" (from env APP_MAIL__TLS_SERVER_NAME); allowed: a host name the server's certificate holds, such as "smtp.internal"; empty for mail.host`},
		{"tls_server_name without tls", []string{"APP_MAIL__TLS=none", "APP_MAIL__TLS_SERVER_NAME=smtp.internal"},
			`config: invalid value for mail.tls: "none" (from env APP_MAIL__TLS); allowed: starttls or tls with mail.tls_ca_file or mail.tls_server_name, which only a TLS connection uses`},
		{"from domain not a helo name", []string{"APP_MAIL__TRANSPORT=smtp", "APP_MAIL__HOST=smtp.example.com", "APP_MAIL__FROM=noreply@crm_mail.example.com"},
			`config: invalid value for mail.helo: "" (from default); allowed: a fully qualified domain name, such as "crm.example.com", which the smtp transport needs when the domain of mail.from is not one`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := boot(t, tt.environ, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("boot error:\n%v\nwant it to hold:\n%s", err, tt.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("the error shows the password: %v", err)
			}
		})
	}
}

func TestABrokenTemplateFailsTheBootNamingItsFile(t *testing.T) {
	err := boot(t, nil, fstest.MapFS{
		"mail/welcome.txt.tmpl":  {Data: []byte("Hello {{.Name}}\n")},
		"mail/invoice.html.tmpl": {Data: []byte("<p>Total: {{.Total</p>")},
	})
	if err == nil || !strings.Contains(err.Error(), "mail: templates: template: mail/invoice.html.tmpl:1: ") {
		t.Fatalf("boot error %v, want one naming mail/invoice.html.tmpl", err)
	}
	err = boot(t, nil, fstest.MapFS{
		"mail/layout.html.tmpl":  {Data: []byte(`<main>{{template "content" .}}</main>`)},
		"mail/invoice.html.tmpl": {Data: []byte("<p>{{if .Paid}}paid</p>")},
	})
	if err == nil || !strings.Contains(err.Error(), "template: mail/invoice.html.tmpl:1: ") {
		t.Fatalf("boot error %v, want one naming mail/invoice.html.tmpl under its layout", err)
	}
}

// fakeMailer is a mailer on the queue fake, with the example templates.
func fakeMailer(t *testing.T) (*mail.Mailer, *queuetest.Fake) {
	fake := queuetest.NewFake()
	m, err := mail.New(mail.Params{Config: mail.Config{Transport: mail.Memory, From: "CRM <noreply@crm.example.com>"},
		Dispatcher: fake.Dispatcher(), Templates: []fs.FS{templatesFS}})
	if err != nil {
		t.Fatal(err)
	}
	return m, fake
}

func TestQueueThroughTheFake(t *testing.T) {
	m, fake := fakeMailer(t)
	id, err := m.Queue(context.Background(), exportReady())
	if err != nil {
		t.Fatal(err)
	}
	mailtest.AssertQueued(t, fake, func(msg mailtest.Message) bool {
		return msg.Subject == "Your export is ready" && strings.Contains(msg.Text, "exports/42.csv") &&
			len(msg.Envelope.To) == 3 && len(msg.Attachments) == 2
	})
	d := fake.All()
	if len(d) != 1 || d[0].ID != id || d[0].Name != "mail.send" {
		t.Fatalf("dispatches %+v, want one mail.send with id %s", d, id)
	}
	mailtest.AssertNothingSent(t, m)
}

func TestTemplateErrorsFailTheCall(t *testing.T) {
	m, fake := fakeMailer(t)
	tests := []struct {
		name string
		msg  mail.Mail
		want string
	}{
		{"missing key", mail.Template("ada@example.com", "Export", "mail/export-ready").With(map[string]any{"Link": "x"}),
			`mail: render mail/export-ready.html.tmpl: template: mail/export-ready.html.tmpl:1:36: executing "mail/export-ready.html.tmpl" at <.URL>: map has no entry for key "URL"`},
		{"misspelt name", mail.Template("ada@example.com", "Export", "mail/export-redy"),
			`mail: template "mail/export-redy": no such mail template; did you mean mail/export-ready?`},
		{"unknown name", mail.Template("ada@example.com", "Export", "invoices/paid"),
			`mail: template "invoices/paid": no such mail template; there are mail/export-ready`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := m.Queue(context.Background(), tt.msg)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Queue: %v\nwant:   %s", err, tt.want)
			}
		})
	}
	if _, err := m.Queue(context.Background(), tests[0].msg); !errors.Is(err, mail.ErrRender) {
		t.Fatalf("errors.Is(%v, ErrRender) = false", err)
	}
	if _, err := m.Queue(context.Background(), mail.Template("a@example.com", "x", "nope")); !errors.Is(err, mail.ErrNoTemplate) {
		t.Fatalf("errors.Is(%v, ErrNoTemplate) = false", err)
	}
	fake.AssertNothingDispatched(t)
}

func TestAnInvalidMessageFailsTheCall(t *testing.T) {
	m, fake := fakeMailer(t)
	ok := mail.Message{To: []string{"ada@example.com"}, Subject: "Hello", Text: "Hi"}
	tests := []struct {
		name string
		edit func(*mail.Message)
		want string
	}{
		{"no recipient", func(m *mail.Message) { m.To = nil }, "mail: the message has no recipient: set To, Cc or Bcc: invalid message"},
		{"bad address", func(m *mail.Message) { m.Cc = []string{"grace@example.com", "not an address"} },
			"mail: Cc address 2 of 2 does not parse (mail: no angle-addr): invalid message"},
		{"no subject", func(m *mail.Message) { m.Subject = " " }, "mail: the message needs a Subject of one line: invalid message"},
		{"subject injection", func(m *mail.Message) { m.Subject = "Hi\r\nBcc: all@example.com" }, "mail: the message needs a Subject of one line: invalid message"},
		{"no body", func(m *mail.Message) { m.Text = "" }, "mail: the message has no body: set Text, HTML or both: invalid message"},
		{"reserved header", func(m *mail.Message) { m.Headers = map[string]string{"bcc": "x@example.com"} },
			"mail: set header bcc through the message's Bcc field: invalid message"},
		{"mime header", func(m *mail.Message) { m.Headers = map[string]string{"Content-Type": "text/plain"} },
			"mail: header Content-Type is written by the mailer and cannot be set: invalid message"},
		{"header injection", func(m *mail.Message) { m.Headers = map[string]string{"X-Ref": "1\nBcc: all@example.com"} },
			`mail: header "X-Ref" is not a header name with a one-line value: invalid message`},
		{"attachment without name", func(m *mail.Message) { m.Attachments = []mail.Attachment{{Data: []byte("x")}} },
			"mail: attachment 1 of 1 needs a Name of one line, without quotes: invalid message"},
		{"bad content type", func(m *mail.Message) { m.Attachments = []mail.Attachment{{Name: "a.bin", ContentType: "not a type"}} },
			`mail: attachment a.bin has the content type "not a type", which does not parse (mime: expected slash after first token): invalid message`},
		{"header line over 998 octets", func(m *mail.Message) { m.Headers = map[string]string{"X-Ref": strings.Repeat("a", 1200)} },
			"mail: header X-Ref would have a line of 1201 octets, over the 998 a line may hold (RFC 5322): invalid message"},
		{"inline name not a Content-ID", func(m *mail.Message) {
			m.Attachments = []mail.Attachment{{Name: "my logo.png", Data: []byte("x"), Inline: true}}
		}, "mail: inline attachment 1 of 1 is named \"my logo.png\": an inline file's Name is its Content-ID, of ASCII letters, digits and !#$%&'*+-./=?^_`{|}~@ only: invalid message"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := ok
			tt.edit(&msg)
			_, err := m.Queue(context.Background(), msg)
			if err == nil || err.Error() != tt.want || !errors.Is(err, mail.ErrInvalidMessage) {
				t.Fatalf("Queue: %v\nwant:   %s", err, tt.want)
			}
			if err := m.Send(context.Background(), msg); err == nil || err.Error() != tt.want {
				t.Fatalf("Send: %v\nwant: %s", err, tt.want)
			}
		})
	}
	fake.AssertNothingDispatched(t)
	mailtest.AssertNothingSent(t, m)
}

func TestAQueuedMessageOverTheLimitIsRefused(t *testing.T) {
	m, fake := fakeMailer(t)
	msg := mail.Message{To: []string{"ada@example.com"}, Subject: "Your export", Text: "Attached.",
		Attachments: []mail.Attachment{{Name: "contacts.csv", Data: make([]byte, 800<<10)}}}
	_, err := m.Queue(context.Background(), msg)
	if !errors.Is(err, queue.ErrPayloadTooLarge) || !strings.HasPrefix(err.Error(), `mail: the message "Your export" is `) ||
		!strings.Contains(err.Error(), "bytes once queued, over the queue's limit of 1048576: store large files elsewhere and mail a link to them, or Send it now") {
		t.Fatalf("Queue of an 800 KiB attachment: %v", err)
	}
	fake.AssertNothingDispatched(t)
	if err := m.Send(context.Background(), msg); err != nil {
		t.Fatalf("Send of the same message: %v", err)
	}
}

func TestQueuedMailGoesToTheConfiguredQueueAndKeepsItsSize(t *testing.T) {
	fake := queuetest.NewFake()
	m, err := mail.New(mail.Params{Config: mail.Config{Transport: mail.Memory, Queue: "mail"}, Dispatcher: fake.Dispatcher()})
	if err != nil {
		t.Fatal(err)
	}
	html := strings.Repeat(`<p>Your <a href="https://crm.example.com/x?a=1&b=2">export</a></p>`+"\n", 1500) // ~100 KB
	if _, err := m.Queue(context.Background(), mail.Message{To: []string{"ada@example.com"}, Subject: "Big", HTML: html}); err != nil {
		t.Fatal(err)
	}
	d := fake.All()
	if len(d) != 1 || d[0].Options.Queue != "mail" || d[0].Options.MaxAttempts != 5 {
		t.Fatalf("dispatched %+v, want one mail.send on queue mail with 5 attempts", d)
	}
	if ratio := float64(len(d[0].Payload)) / float64(len(html)); ratio > 1.25 {
		t.Fatalf("%d bytes of HTML took %d bytes queued (%.2f×)", len(html), len(d[0].Payload), ratio)
	}
	mailtest.AssertQueued(t, fake, func(msg mailtest.Message) bool { return msg.HTML == html })
}
