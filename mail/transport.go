package mail

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
)

// Transport delivers rendered messages. Every transport of a mailer is
// handed the same bytes.
type Transport interface {
	// Send delivers raw, a message's RFC 5322 bytes, from env.From to
	// env.To.
	Send(ctx context.Context, env Envelope, raw []byte) error
	// String names the transport in messages: "smtp mail.example.com:587",
	// "log", "memory".
	String() string
}

// SendError is a message a server refused: its reply, and whether the
// refusal is permanent (a 5xx reply: the job fails at once) or for now (a
// 4xx reply: it is retried, and a failover transport tried).
type SendError struct {
	Transport string // such as "smtp mail.example.com:587"
	Command   string // the command refused: "MAIL FROM", "RCPT TO" or "DATA"
	Code      int    // the reply code, such as 550
	Reply     string // the server's text, such as "5.1.1 no such user"
	Permanent bool   // a 5xx reply
}

// Error names the transport, the refused command and the server's reply.
func (e *SendError) Error() string {
	kind := "for now"
	if e.Permanent {
		kind = "permanently"
	}
	return fmt.Sprintf("mail: %s refused the message %s at %s: %d %s", e.Transport, kind, e.Command, e.Code, e.Reply)
}

// permanent reports whether err is a permanent refusal of the message.
func permanent(err error) bool {
	var se *SendError
	return errors.As(err, &se) && se.Permanent
}

// logTransport logs one line per message and delivers nothing.
type logTransport struct{ logger *slog.Logger }

func (logTransport) String() string { return Log }

func (t logTransport) Send(ctx context.Context, env Envelope, raw []byte) error {
	t.logger.InfoContext(ctx, "mail not sent: the log transport logs it instead",
		"recipients", len(env.To), "subject", env.Subject, "bytes", len(raw), "message_id", env.MessageID)
	return nil
}

// Sent is a message the memory transport received.
type Sent struct {
	Envelope
	Raw []byte // the message's RFC 5322 bytes
}

// MemoryTransport keeps the messages sent through it, for tests. It is
// safe for concurrent use.
type MemoryTransport struct {
	mu   sync.Mutex
	sent []Sent
}

// String returns "memory".
func (*MemoryTransport) String() string { return Memory }

// Send records the message.
func (t *MemoryTransport) Send(_ context.Context, env Envelope, raw []byte) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	env.To = append([]string(nil), env.To...)
	t.sent = append(t.sent, Sent{Envelope: env, Raw: append([]byte(nil), raw...)})
	return nil
}

// Sent returns the messages sent so far, in order.
func (t *MemoryTransport) Sent() []Sent {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Sent(nil), t.sent...)
}

// Reset forgets the messages sent so far.
func (t *MemoryTransport) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sent = nil
}

// chain is the transport and its failovers: each is tried in turn until
// one sends, unless one refuses the message permanently.
type chain []Transport

// send sends through the first transport that takes the message and
// returns it; the error of every one tried when none does.
func (c chain) send(ctx context.Context, env Envelope, raw []byte) (Transport, error) {
	var errs []error
	for _, t := range c {
		err := t.Send(ctx, env, raw)
		if err == nil {
			return t, nil
		}
		errs = append(errs, err)
		if permanent(err) || ctx.Err() != nil {
			break
		}
	}
	if len(errs) == 1 {
		return nil, errs[0]
	}
	return nil, chainError(errs)
}

// chainError is the error of each transport of a chain tried in turn.
type chainError []error

func (e chainError) Error() string {
	parts := make([]string, len(e))
	for i, err := range e {
		parts[i] = err.Error()
	}
	return strings.Join(parts, "; then ")
}

func (e chainError) Unwrap() []error { return e }
