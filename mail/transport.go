package mail

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	netmail "net/mail"
	"net/textproto"
	"strings"
	"sync"
)

// transport delivers rendered messages. Every transport of a mailer is
// handed the same bytes.
type transport interface {
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

// IsPermanent reports whether err says that sending the message again
// cannot work: a server refused it permanently (a 5xx reply, a
// [*SendError] with Permanent set), or the message is invalid
// ([ErrInvalidMessage]), its template is missing ([ErrNoTemplate]) or
// does not render ([ErrRender]). A job that sends mail fails at once on
// such an error (queue.Permanent), and retries any other.
func IsPermanent(err error) bool {
	var se *SendError
	return errors.As(err, &se) && se.Permanent ||
		errors.Is(err, ErrInvalidMessage) || errors.Is(err, ErrNoTemplate) || errors.Is(err, ErrRender)
}

// logTransport logs one line per message and delivers nothing. In
// development it adds the recipients' addresses and the text body.
type logTransport struct {
	logger      *slog.Logger
	development bool
}

func (logTransport) String() string { return Log }

func (t logTransport) Send(ctx context.Context, env Envelope, raw []byte) error {
	attrs := []any{"recipients", len(env.To), "subject", env.Subject, "bytes", len(raw), "message_id", env.MessageID}
	if t.development {
		attrs = append(attrs, "to", strings.Join(env.To, ", "))
		if text, ok := textBody(raw); ok {
			attrs = append(attrs, "text", text)
		}
	}
	t.logger.InfoContext(ctx, "mail not sent: the log transport logs it instead", attrs...)
	return nil
}

// maxLoggedText bounds the text body the log transport logs; a longer
// one is cut and ends in "…".
const maxLoggedText = 4 << 10

// textBody is the plain-text body of raw, a message as render writes it,
// decoded, with CRLF line ends as "\n", cut at maxLoggedText bytes; false
// when it has none (an HTML-only message).
func textBody(raw []byte) (string, bool) {
	m, err := netmail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return "", false
	}
	return textPart(textproto.MIMEHeader(m.Header), m.Body, 0)
}

// textPart finds the first text/plain part of a body with header h that
// is not an attachment, in multiparts nested up to 5 deep.
func textPart(h textproto.MIMEHeader, body io.Reader, depth int) (string, bool) {
	media, params, err := mime.ParseMediaType(h.Get("Content-Type"))
	if h.Get("Content-Type") == "" {
		media, err = "text/plain", nil // RFC 2045's default
	}
	if disposition, _, _ := mime.ParseMediaType(h.Get("Content-Disposition")); err != nil || disposition == "attachment" {
		return "", false
	}
	switch {
	case strings.HasPrefix(media, "multipart/") && depth < 5:
		parts := multipart.NewReader(body, params["boundary"])
		for {
			p, err := parts.NextRawPart()
			if err != nil {
				return "", false
			}
			if text, ok := textPart(p.Header, p, depth+1); ok {
				return text, true
			}
		}
	case media == "text/plain":
		switch strings.ToLower(h.Get("Content-Transfer-Encoding")) {
		case "quoted-printable":
			body = quotedprintable.NewReader(body)
		case "base64":
			body = base64.NewDecoder(base64.StdEncoding, body) // it skips line breaks
		}
		b, err := io.ReadAll(io.LimitReader(body, maxLoggedText+1))
		if err != nil {
			return "", false
		}
		cut := len(b) > maxLoggedText
		if cut {
			b = b[:maxLoggedText-len("…")]
		}
		text := strings.ToValidUTF8(strings.ReplaceAll(string(b), "\r\n", "\n"), "") // the cut may split a character
		if cut {
			text += "…"
		}
		return text, true
	}
	return "", false
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
type chain []transport

// send sends through the first transport that takes the message and
// returns it; the error of every one tried when none does.
func (c chain) send(ctx context.Context, env Envelope, raw []byte) (transport, error) {
	var errs []error
	for _, t := range c {
		err := t.Send(ctx, env, raw)
		if err == nil {
			return t, nil
		}
		errs = append(errs, err)
		if IsPermanent(err) || ctx.Err() != nil {
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
