package mail_test

import (
	"context"
	"io/fs"
	"testing"

	"github.com/navree/navree/mail"
	"github.com/navree/navree/mail/mailtest"
	"github.com/navree/navree/queue"
)

// BenchmarkQueue renders the export mail (templates, layout, an
// attachment and an inline image) and queues it on the memory queue:
// what a request pays to queue a mail.
func BenchmarkQueue(b *testing.B) {
	q, err := queue.New(queue.Params{Config: queue.Config{Driver: queue.Memory}})
	if err != nil {
		b.Fatal(err)
	}
	m, err := mail.New(mail.Params{Config: mail.Config{Transport: mail.Memory, From: "CRM <noreply@crm.example.com>"},
		Dispatcher: q, Templates: []fs.FS{templatesFS}})
	if err == nil {
		err = q.Handle(m.Jobs()...)
	}
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Queue(ctx, exportReady()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSendSMTP sends the export mail to the test SMTP server on the
// loopback interface, a connection per message (dial, EHLO, MAIL, RCPT ×3,
// DATA, QUIT): what a worker pays per mail, the network aside.
func BenchmarkSendSMTP(b *testing.B) {
	srv := mailtest.NewServer(b)
	m, err := mail.New(mail.Params{Config: mail.Config{Transport: mail.SMTP, Host: srv.Host(), Port: srv.Port(), TLS: mail.NoTLS,
		From: "CRM <noreply@crm.example.com>"}, Templates: []fs.FS{templatesFS}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Send(ctx, exportReady()); err != nil {
			b.Fatal(err)
		}
	}
}
