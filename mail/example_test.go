package mail_test

// The examples of docs/mail.md, compiled and run.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing/fstest"
	"time"

	"github.com/navree/navree/mail"
	"github.com/navree/navree/mail/mailtest"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/queuetest"
	"github.com/navree/navree/testing/apptest"
)

// docTemplates is the folder mail/ of the docs' app, as the embed.FS of
// `//go:embed mail` holds it: a layout per kind and the export-ready mail.
var docTemplates = fstest.MapFS{
	"mail/layout.html.tmpl":       {Data: []byte(`<html><body>{{template "content" .}}<p>The CRM team</p></body></html>`)},
	"mail/layout.txt.tmpl":        {Data: []byte("{{template \"content\" .}}\nThe CRM team\n")},
	"mail/export-ready.html.tmpl": {Data: []byte(`<p>Your export is ready: <a href="{{.URL}}">download it</a>.</p>`)},
	"mail/export-ready.txt.tmpl":  {Data: []byte("Your export is ready: {{.URL}}\n")},
}

// ExportContacts is the job of docs/queues.md: build a CSV of a company's
// contacts and mail the link to whoever asked.
type ExportContacts struct {
	CompanyID   string `json:"company_id"`
	RequestedBy string `json:"requested_by"`
}

func (ExportContacts) JobName() string { return "contacts.export" }

type exportHandler struct {
	mailer *mail.Mailer
}

func (h *exportHandler) Handle(ctx context.Context, job ExportContacts, jc queue.JobContext) error {
	url, err := buildExport(ctx, job.CompanyID)
	if err != nil {
		return err
	}
	_, err = h.mailer.Queue(ctx, mail.Template(job.RequestedBy, "Your export is ready", "mail/export-ready").
		With(map[string]any{"URL": url}))
	return err
}

func buildExport(_ context.Context, companyID string) (string, error) {
	return "https://crm.example.com/exports/" + companyID + ".csv", nil
}

// docMailer is a mailer on the memory transport and a queue fake, with
// the docs' templates, dating its messages by a fixed clock.
func docMailer(cfg mail.Config) (*mail.Mailer, *queuetest.Fake) {
	cfg.Transport = mail.Memory
	fake := queuetest.NewFake()
	m, err := mail.New(mail.Params{
		Config:     cfg,
		Dispatcher: fake.Dispatcher(),
		Clock:      apptest.FixedClock(time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)),
		Templates:  []fs.FS{docTemplates},
	})
	if err != nil {
		panic(err)
	}
	return m, fake
}

// A job handler queues the mail that says its export is ready: a mail.send
// job, with the message rendered.
func Example_exportReady() {
	m, fake := docMailer(mail.Config{From: "CRM <noreply@crm.example.com>"})
	h := &exportHandler{mailer: m}
	err := h.Handle(context.Background(), ExportContacts{CompanyID: "42", RequestedBy: "ada@example.com"}, queue.JobContext{})
	if err != nil {
		panic(err)
	}

	d := fake.All()[0]
	fmt.Println(d.Name, "attempts:", d.Options.MaxAttempts)
	job := queuetest.Dispatched[mail.SendJob](fake)[0]
	msg, err := mailtest.Parse([]byte(job.Raw))
	if err != nil {
		panic(err)
	}
	fmt.Println("to:", job.To)
	fmt.Println("subject:", msg.Subject)
	fmt.Print(msg.Text)
	// Output:
	// mail.send attempts: 5
	// to: [ada@example.com]
	// subject: Your export is ready
	// Your export is ready: https://crm.example.com/exports/42.csv
	//
	// The CRM team
}

// A template mail sent now: both bodies rendered under their layouts.
func ExampleTemplate() {
	m, _ := docMailer(mail.Config{From: "CRM <noreply@crm.example.com>"})
	err := m.Send(context.Background(), mail.Template("ada@example.com", "Your export is ready", "mail/export-ready").
		With(map[string]any{"URL": "https://crm.example.com/exports/42.csv"}))
	if err != nil {
		panic(err)
	}

	msg, err := mailtest.Parse(m.Memory().Sent()[0].Raw)
	if err != nil {
		panic(err)
	}
	fmt.Println("From:", msg.From)
	fmt.Println("To:", msg.To)
	fmt.Println("Subject:", msg.Subject)
	fmt.Println("Date:", msg.Header.Get("Date"))
	fmt.Println("HTML:", msg.HTML)
	fmt.Print("Text: ", msg.Text)
	// Output:
	// From: CRM <noreply@crm.example.com>
	// To: [ada@example.com]
	// Subject: Your export is ready
	// Date: Thu, 03 Dec 2026 09:00:00 +0000
	// HTML: <html><body><p>Your export is ready: <a href="https://crm.example.com/exports/42.csv">download it</a>.</p><p>The CRM team</p></body></html>
	// Text: Your export is ready: https://crm.example.com/exports/42.csv
	//
	// The CRM team
}

// A message written out: recipients, a reply address, a header of its
// own, an attached file and an inline image.
func ExampleMessage() {
	m, _ := docMailer(mail.Config{From: "CRM <noreply@crm.example.com>"})
	logo := []byte("\x89PNG\r\n\x1a\n...")
	err := m.Send(context.Background(), mail.Message{
		To:      []string{"Ada Lovelace <ada@example.com>"},
		Cc:      []string{"grace@example.com"},
		Bcc:     []string{"audit@example.com"},
		ReplyTo: "support@crm.example.com",
		Subject: "Your contacts",
		Text:    "Your contacts are attached.",
		HTML:    `<p>Your contacts are attached.</p><img src="cid:logo.png" alt="CRM">`,
		Headers: map[string]string{"X-Entity-Ref-ID": "export-42"},
		Attachments: []mail.Attachment{
			{Name: "contacts.csv", Data: []byte("name,email\nAda,ada@example.com\n")},
			{Name: "logo.png", ContentType: "image/png", Data: logo, Inline: true},
		},
	})
	if err != nil {
		panic(err)
	}

	sent := m.Memory().Sent()[0]
	msg, err := mailtest.Parse(sent.Raw)
	if err != nil {
		panic(err)
	}
	fmt.Println("envelope:", sent.From, "to", sent.To)
	fmt.Println("To:", msg.To, "Cc:", msg.Cc, "Reply-To:", msg.ReplyTo)
	fmt.Println("Bcc header:", msg.Header.Get("Bcc") != "")
	fmt.Println("X-Entity-Ref-ID:", msg.Header.Get("X-Entity-Ref-ID"))
	fmt.Println("Message-ID from the sender's domain:", strings.HasSuffix(msg.MessageID, "@crm.example.com>"))
	for _, a := range msg.Attachments {
		fmt.Printf("%s %s inline=%v cid=%q\n", a.Name, a.ContentType, a.Inline, a.ContentID)
	}
	// Output:
	// envelope: noreply@crm.example.com to [ada@example.com grace@example.com audit@example.com]
	// To: [ada@example.com] Cc: [grace@example.com] Reply-To: support@crm.example.com
	// Bcc header: false
	// X-Entity-Ref-ID: export-42
	// Message-ID from the sender's domain: true
	// logo.png image/png inline=true cid="logo.png"
	// contacts.csv text/csv inline=false cid=""
}

// A message that cannot be sent as given fails the call, with
// ErrInvalidMessage.
func ExampleErrInvalidMessage() {
	m, _ := docMailer(mail.Config{})
	for _, msg := range []mail.Message{
		{Subject: "Hello", Text: "Hi"},
		{To: []string{"ada@example.com", "not an address"}, Subject: "Hello", Text: "Hi"},
		{To: []string{"ada@example.com"}, Subject: "Hi\r\nBcc: all@example.com", Text: "Hi"},
		{To: []string{"ada@example.com"}, Subject: "Hello"},
		{To: []string{"ada@example.com"}, Subject: "Hello", Text: "Hi", Headers: map[string]string{"Bcc": "all@example.com"}},
		{To: []string{"ada@example.com"}, Subject: "Hello", Text: "Hi", Headers: map[string]string{"Content-Type": "text/plain"}},
	} {
		err := m.Send(context.Background(), msg)
		fmt.Println(errors.Is(err, mail.ErrInvalidMessage), err)
	}
	// Output:
	// true mail: the message has no recipient: set To, Cc or Bcc: invalid message
	// true mail: To address 2 of 2 does not parse (mail: no angle-addr): invalid message
	// true mail: the message needs a Subject of one line: invalid message
	// true mail: the message has no body: set Text, HTML or both: invalid message
	// true mail: set header Bcc through the message's Bcc field: invalid message
	// true mail: header Content-Type is written by the mailer and cannot be set: invalid message
}

// A template error fails Send and Queue: a key the data lacks, or a name
// no file has.
func ExampleTemplate_errors() {
	m, _ := docMailer(mail.Config{})
	for _, msg := range []mail.Mail{
		mail.Template("ada@example.com", "Your export is ready", "mail/export-ready").With(map[string]any{"Link": "x"}),
		mail.Template("ada@example.com", "Your export is ready", "mail/export-redy"),
		mail.Template("ada@example.com", "Your invoice", "invoices/paid"),
	} {
		_, err := m.Queue(context.Background(), msg)
		fmt.Println(err)
	}
	// Output:
	// mail: render mail/export-ready.html.tmpl: template: mail/export-ready.html.tmpl:1:36: executing "mail/export-ready.html.tmpl" at <.URL>: map has no entry for key "URL"
	// mail: template "mail/export-redy": no such mail template; did you mean mail/export-ready?
	// mail: template "invoices/paid": no such mail template; there are mail/export-ready
}

// Templates are parsed when the mailer is built: a broken one is an error
// naming its file.
func ExampleNew_brokenTemplate() {
	_, err := mail.New(mail.Params{Templates: []fs.FS{fstest.MapFS{
		"mail/invoice.html.tmpl": {Data: []byte("<p>Total: {{.Total</p>")},
	}}})
	fmt.Println(err)
	// Output:
	// mail: templates: template: mail/invoice.html.tmpl:1: bad character U+003C '<'
}

// Later queues the mail.send job with a delay.
func ExampleMailer_Later() {
	m, fake := docMailer(mail.Config{})
	_, err := m.Later(context.Background(), mail.Message{To: []string{"ada@example.com"}, Subject: "How was your trial?",
		Text: "Tell us how it went."}, 72*time.Hour)
	if err != nil {
		panic(err)
	}
	e := fake.Envelopes()[0]
	fmt.Println(e.Name, e.Delay)
	// Output:
	// mail.send 72h0m0s
}

// A queued message must fit in a job's payload: a large file is refused.
func ExampleMailer_Queue_tooLarge() {
	m, fake := docMailer(mail.Config{})
	msg := mail.Message{To: []string{"ada@example.com"}, Subject: "Your export", Text: "Attached.",
		Attachments: []mail.Attachment{{Name: "contacts.csv", Data: make([]byte, 800<<10)}}}
	_, err := m.Queue(context.Background(), msg)
	fmt.Println(errors.Is(err, queue.ErrPayloadTooLarge), len(fake.Envelopes()))
	fmt.Println(m.Send(context.Background(), msg)) // sent now, it has no such limit
	// Output:
	// true 0
	// <nil>
}

// A server's refusal is a *SendError: its text names the transport, the
// command refused and the reply.
func ExampleSendError() {
	var err error = &mail.SendError{Transport: "smtp mail.example.com:587", Command: "RCPT TO",
		Code: 550, Reply: "5.1.1 no such user", Permanent: true}
	err = fmt.Errorf("notify the owner: %w", err)

	var se *mail.SendError
	if errors.As(err, &se) && se.Permanent {
		fmt.Println(se.Code, se.Reply)
	}
	fmt.Println(se)
	// Output:
	// 550 5.1.1 no such user
	// mail: smtp mail.example.com:587 refused the message permanently at RCPT TO: 550 5.1.1 no such user
}

// The pages of the previews, which serve shows in development.
func ExampleMailer_PreviewRoutes() {
	m, err := mail.New(mail.Params{
		Config:    mail.Config{From: "CRM <noreply@crm.example.com>"},
		Templates: []fs.FS{docTemplates},
		Previews: []mail.Preview{{Name: "export-ready", Func: func(context.Context) (mail.Mail, error) {
			return mail.Template("ada@example.com", "Your export is ready", "mail/export-ready").
				With(map[string]any{"URL": "https://crm.example.com/exports/42.csv"}), nil
		}}},
	})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	for _, r := range m.PreviewRoutes() {
		fmt.Println(r.Pattern)
		mux.Handle(r.Pattern, r.Handler)
	}
	for _, path := range []string{"/mail/previews/export-ready/html", "/mail/previews/export-redy"} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		body, _ := io.ReadAll(rec.Body)
		fmt.Printf("GET %s: %d %s", path, rec.Code, body)
		fmt.Println()
	}
	// Output:
	// GET /mail/previews
	// GET /mail/previews/{name}
	// GET /mail/previews/{name}/html
	// GET /mail/previews/{name}/eml
	// GET /mail/previews/export-ready/html: 200 <html><body><p>Your export is ready: <a href="https://crm.example.com/exports/42.csv">download it</a>.</p><p>The CRM team</p></body></html>
	// GET /mail/previews/export-redy: 404 no mail preview "export-redy" (GET /mail/previews lists them)
}

// Without fx: the mailer is built on the queue, and the queue is given
// the mailer's mail.send job, which sends what the mailer queues.
func ExampleMailer_Jobs() {
	q, err := queue.New(queue.Params{Config: queue.Config{Driver: queue.Memory}})
	if err != nil {
		panic(err)
	}
	mailer, err := mail.New(mail.Params{Config: mail.Config{Transport: mail.Memory}, Dispatcher: q, Templates: []fs.FS{docTemplates}})
	if err == nil {
		err = q.Handle(mailer.Jobs()...)
	}
	if err != nil {
		panic(err)
	}

	ctx := context.Background()
	_, err = mailer.Queue(ctx, mail.Template("ada@example.com", "Your export is ready", "mail/export-ready").
		With(map[string]any{"URL": "https://crm.example.com/exports/42.csv"}))
	if err != nil {
		panic(err)
	}
	stats, err := q.RunPending(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println(stats.Succeeded, "sent:", mailer.Memory().Sent()[0].Subject)
	// Output:
	// 1 sent: Your export is ready
}
