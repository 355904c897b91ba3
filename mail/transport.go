package mail

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/textproto"
	"strconv"
	"strings"
	"sync"

	gomail "github.com/wneessen/go-mail"
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

// smtpTransport sends through an SMTP server, connecting afresh for each
// message: no connection outlives the send that opened it.
type smtpTransport struct {
	cfg  Config
	tls  *tls.Config
	addr string
}

func newSMTP(cfg Config, tlsConfig *tls.Config) *smtpTransport {
	if cfg.Port == 0 {
		cfg.Port = 587
		if cfg.TLS == TLS {
			cfg.Port = 465
		}
	}
	return &smtpTransport{cfg: cfg, tls: tlsConfig, addr: net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))}
}

func (t *smtpTransport) String() string { return "smtp " + t.addr }

func (t *smtpTransport) client() (*gomail.Client, error) {
	opts := []gomail.Option{gomail.WithPort(t.cfg.Port), gomail.WithTimeout(t.cfg.Timeout)}
	switch t.cfg.TLS {
	case STARTTLS:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	case TLS:
		opts = append(opts, gomail.WithSSL())
	default:
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	}
	if t.tls != nil {
		opts = append(opts, gomail.WithTLSConfig(t.tls))
	}
	if t.cfg.Username != "" {
		opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover),
			gomail.WithUsername(t.cfg.Username), gomail.WithPassword(t.cfg.Password.Reveal()))
	}
	return gomail.NewClient(t.cfg.Host, opts...)
}

// Send dials, says hello, upgrades to TLS and logs in as configured, sends
// the message and quits. Cancelling ctx closes the connection.
func (t *smtpTransport) Send(ctx context.Context, env Envelope, raw []byte) error {
	c, err := t.client()
	if err != nil {
		return fmt.Errorf("mail: %s: %w", t, err)
	}
	conn, err := c.DialToSMTPClientWithContext(ctx)
	if err != nil {
		return fmt.Errorf("mail: %s: connect: %w", t, t.hide(err))
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if err := conn.Mail("<" + env.From + ">"); err != nil {
		return t.refused(ctx, "MAIL FROM", err)
	}
	for _, to := range env.To {
		if err := conn.Rcpt("<" + to + ">"); err != nil {
			return t.refused(ctx, "RCPT TO", err)
		}
	}
	w, err := conn.Data()
	if err != nil {
		return t.refused(ctx, "DATA", err)
	}
	if _, err := w.Write(raw); err != nil {
		return t.refused(ctx, "DATA", err)
	}
	if err := w.Close(); err != nil {
		return t.refused(ctx, "DATA", err)
	}
	_ = conn.Quit() // the message is accepted; a failed goodbye changes nothing
	return nil
}

// refused is the error of a command the server answered with err: a
// [*SendError] for a 4xx or 5xx reply, else a connection error, or ctx's
// error when ctx ended the send.
func (t *smtpTransport) refused(ctx context.Context, command string, err error) error {
	var reply *textproto.Error
	if errors.As(err, &reply) && reply.Code >= 400 && reply.Code < 600 {
		return &SendError{Transport: t.String(), Command: command, Code: reply.Code,
			Reply: t.hide(errors.New(strings.ReplaceAll(reply.Msg, "\n", " "))).Error(), Permanent: reply.Code >= 500}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("mail: %s: %s: %w", t, command, context.Cause(ctx))
	}
	return fmt.Errorf("mail: %s: %s: %w", t, command, t.hide(err))
}

// hide removes the password from err's text, should a library or server
// ever echo it.
func (t *smtpTransport) hide(err error) error {
	if pw := t.cfg.Password.Reveal(); pw != "" && strings.Contains(err.Error(), pw) {
		return errors.New(strings.ReplaceAll(err.Error(), pw, "xxxxx"))
	}
	return err
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
