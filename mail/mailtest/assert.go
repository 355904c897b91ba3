package mailtest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/navree/navree/mail"
	"github.com/navree/navree/queue/queuetest"
)

// Sent returns the messages the memory transport of m has sent, parsed,
// in order. It fails t when m has no memory transport: set [mail]
// transport = "memory" in the test's configuration.
func Sent(t testing.TB, m *mail.Mailer) []Message {
	t.Helper()
	mem := m.Memory()
	if mem == nil {
		t.Fatalf(`mailtest: the mailer has no memory transport: configure the test app with [mail] transport = "memory"`)
		return nil
	}
	var out []Message
	for i, s := range mem.Sent() {
		msg, err := Parse(s.Raw)
		if err != nil {
			t.Errorf("mailtest: sent message %d: %v", i+1, err)
			continue
		}
		msg.Envelope = Envelope{From: s.From, To: s.To}
		out = append(out, msg)
	}
	return out
}

// AssertSent fails t unless the memory transport of m has sent a message
// for which match returns true (nil matches any).
func AssertSent(t testing.TB, m *mail.Mailer, match func(Message) bool) bool {
	t.Helper()
	return assertOne(t, "sent", Sent(t, m), match)
}

// AssertNothingSent fails t if the memory transport of m has sent any
// message.
func AssertNothingSent(t testing.TB, m *mail.Mailer) bool {
	t.Helper()
	if sent := Sent(t, m); len(sent) > 0 {
		t.Errorf("mailtest: want no message sent; %s", describe("sent", sent))
		return false
	}
	return true
}

// Queued returns the messages queued on a queue fake (mail.send jobs),
// parsed, in order.
func Queued(t testing.TB, f *queuetest.Fake) []Message {
	t.Helper()
	var out []Message
	for i, j := range queuetest.Dispatched[mail.SendJob](f) {
		msg, err := Parse([]byte(j.Raw))
		if err != nil {
			t.Errorf("mailtest: queued message %d: %v", i+1, err)
			continue
		}
		msg.Envelope = Envelope{From: j.From, To: j.To}
		out = append(out, msg)
	}
	return out
}

// AssertQueued fails t unless a message for which match returns true (nil
// matches any) was queued on the fake.
func AssertQueued(t testing.TB, f *queuetest.Fake, match func(Message) bool) bool {
	t.Helper()
	return assertOne(t, "queued", Queued(t, f), match)
}

func assertOne(t testing.TB, verb string, msgs []Message, match func(Message) bool) bool {
	t.Helper()
	for _, msg := range msgs {
		if match == nil || match(msg) {
			return true
		}
	}
	what := "no message was " + verb
	if len(msgs) > 0 {
		what = "no " + verb + " message matched"
	}
	t.Errorf("mailtest: %s; %s", what, describe(verb, msgs))
	return false
}

// describe lists messages, one a line: recipients and subject.
func describe(verb string, msgs []Message) string {
	if len(msgs) == 0 {
		return "nothing was " + verb
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d message(s):", verb, len(msgs))
	for _, m := range msgs {
		fmt.Fprintf(&b, "\n\tto %s: %q", strings.Join(m.Envelope.To, ", "), m.Subject)
	}
	return b.String()
}
