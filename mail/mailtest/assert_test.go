package mailtest_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/navree/navree/mail"
	"github.com/navree/navree/mail/mailtest"
	"github.com/navree/navree/queue/queuetest"
)

// recordingT records the failures of assertions instead of failing.
type recordingT struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *recordingT) Helper() {}

func (r *recordingT) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recordingT) Fatalf(format string, args ...any) { r.Errorf(format, args...) }

func (r *recordingT) failures() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.errors, "\n")
}

func newMailer(t *testing.T, cfg mail.Config) (*mail.Mailer, *queuetest.Fake) {
	fake := queuetest.NewFake()
	m, err := mail.New(mail.Params{Config: cfg, Dispatcher: fake.Dispatcher()})
	if err != nil {
		t.Fatal(err)
	}
	return m, fake
}

var welcome = mail.Message{To: []string{"ada@example.com"}, Bcc: []string{"audit@example.com"}, Subject: "Welcome", Text: "Hello Ada"}

func TestAssertionsOverTheMemoryTransport(t *testing.T) {
	m, _ := newMailer(t, mail.Config{Transport: mail.Memory})
	rt := &recordingT{TB: t}
	if mailtest.AssertSent(rt, m, nil) || !mailtest.AssertNothingSent(rt, m) {
		t.Fatal("the assertions misjudge a mailer that sent nothing")
	}
	if got, want := rt.failures(), "mailtest: no message was sent; nothing was sent"; got != want {
		t.Fatalf("AssertSent failed with %q, want %q", got, want)
	}
	if err := m.Send(context.Background(), welcome); err != nil {
		t.Fatal(err)
	}
	rt = &recordingT{TB: t}
	if !mailtest.AssertSent(rt, m, func(msg mailtest.Message) bool { return msg.Text == "Hello Ada" }) ||
		mailtest.AssertSent(rt, m, func(msg mailtest.Message) bool { return msg.Subject == "Goodbye" }) ||
		mailtest.AssertNothingSent(rt, m) {
		t.Fatal("the assertions misjudge a mailer that sent a message")
	}
	want := "mailtest: no sent message matched; sent 1 message(s):\n\tto ada@example.com, audit@example.com: \"Welcome\"\n" +
		"mailtest: want no message sent; sent 1 message(s):\n\tto ada@example.com, audit@example.com: \"Welcome\""
	if got := rt.failures(); got != want {
		t.Fatalf("failures:\n%s\nwant:\n%s", got, want)
	}
	sent := mailtest.Sent(t, m)
	if len(sent) != 1 || sent[0].Envelope.From != "noreply@localhost" || len(sent[0].Envelope.To) != 2 || len(sent[0].To) != 1 {
		t.Fatalf("Sent = %+v", sent)
	}
	m.Memory().Reset()
	mailtest.AssertNothingSent(t, m)
}

func TestAssertionsNeedTheMemoryTransport(t *testing.T) {
	m, _ := newMailer(t, mail.Config{Transport: mail.Log})
	rt := &recordingT{TB: t}
	mailtest.Sent(rt, m)
	if got := rt.failures(); got != `mailtest: the mailer has no memory transport: configure the test app with [mail] transport = "memory"` {
		t.Fatalf("Sent on the log transport failed with %q", got)
	}
}

func TestAssertionsOverTheQueueFake(t *testing.T) {
	m, fake := newMailer(t, mail.Config{Transport: mail.Memory})
	rt := &recordingT{TB: t}
	if mailtest.AssertQueued(rt, fake, nil) {
		t.Fatal("AssertQueued passed with nothing queued")
	}
	if _, err := m.Queue(context.Background(), welcome); err != nil {
		t.Fatal(err)
	}
	if !mailtest.AssertQueued(rt, fake, func(msg mailtest.Message) bool { return msg.Subject == "Welcome" }) ||
		mailtest.AssertQueued(rt, fake, func(msg mailtest.Message) bool { return msg.Subject == "Invoice" }) {
		t.Fatal("AssertQueued misjudges the queued message")
	}
	want := "mailtest: no message was queued; nothing was queued\n" +
		"mailtest: no queued message matched; queued 1 message(s):\n\tto ada@example.com, audit@example.com: \"Welcome\""
	if got := rt.failures(); got != want {
		t.Fatalf("failures:\n%s\nwant:\n%s", got, want)
	}
	mailtest.AssertNothingSent(t, m)
}
