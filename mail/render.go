package mail

import (
	"bytes"
	"errors"
	"fmt"
	"mime"
	netmail "net/mail"
	"net/textproto"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofrs/uuid/v5"
	gomail "github.com/wneessen/go-mail"
)

// ErrInvalidMessage matches the error of a message that cannot be sent as
// given: no recipient, an address that does not parse, no subject or
// body, a header it may not set.
var ErrInvalidMessage = errors.New("invalid message")

// Envelope says who a rendered message goes from and to, as the SMTP
// transaction names them (Bcc recipients included), and what the log
// calls it.
type Envelope struct {
	From      string   // the sender's address, such as "noreply@crm.example.com"
	To        []string // every recipient's address: To, Cc and Bcc
	Subject   string
	MessageID string // with its angle brackets
}

// rendered is a message as every transport sends it: its envelope and its
// RFC 5322 bytes, made once.
type rendered struct {
	Envelope
	Raw []byte
}

// reserved are the headers a Message's fields write, which Headers may
// not set.
var reserved = map[string]string{
	"From": "From", "Reply-To": "ReplyTo", "To": "To", "Cc": "Cc", "Bcc": "Bcc", "Subject": "Subject",
	"Message-Id": "", "Date": "", "Mime-Version": "", "Content-Type": "", "Content-Transfer-Encoding": "",
}

// invalid is an [ErrInvalidMessage] error saying what is wrong.
func invalid(format string, args ...any) error {
	return fmt.Errorf("mail: %s: %w", fmt.Sprintf(format, args...), ErrInvalidMessage)
}

// render checks msg and writes it as MIME: from is the sender of a
// message that names none, now its date, domain-less senders' Message-IDs
// take "localhost".
func render(msg Message, from *netmail.Address, now time.Time) (*rendered, error) {
	m := gomail.NewMsg(gomail.WithNoDefaultUserAgent())
	sender := from
	if msg.From != "" {
		a, err := netmail.ParseAddress(msg.From)
		if err != nil {
			return nil, invalid("From does not parse (%v)", err)
		}
		sender = a
	}
	m.SetAddrHeaderFromMailAddress(gomail.HeaderFrom, sender)
	env := Envelope{From: sender.Address, Subject: msg.Subject}
	for _, field := range []struct {
		name   string
		header gomail.AddrHeader
		list   []string
	}{{"To", gomail.HeaderTo, msg.To}, {"Cc", gomail.HeaderCc, msg.Cc}, {"Bcc", gomail.HeaderBcc, msg.Bcc}} {
		var addrs []*netmail.Address
		for i, s := range field.list {
			a, err := netmail.ParseAddress(s)
			if err != nil {
				return nil, invalid("%s address %d of %d does not parse (%v)", field.name, i+1, len(field.list), err)
			}
			addrs = append(addrs, a)
			env.To = append(env.To, a.Address)
		}
		if len(addrs) > 0 {
			m.SetAddrHeaderFromMailAddress(field.header, addrs...)
		}
	}
	if len(env.To) == 0 {
		return nil, invalid("the message has no recipient: set To, Cc or Bcc")
	}
	if msg.ReplyTo != "" {
		a, err := netmail.ParseAddress(msg.ReplyTo)
		if err != nil {
			return nil, invalid("ReplyTo does not parse (%v)", err)
		}
		m.SetAddrHeaderFromMailAddress(gomail.HeaderReplyTo, a)
	}
	if strings.TrimSpace(msg.Subject) == "" || strings.ContainsAny(msg.Subject, "\r\n") {
		return nil, invalid("the message needs a Subject of one line")
	}
	m.Subject(msg.Subject)
	for name, value := range msg.Headers {
		if !isToken(name) || strings.ContainsAny(value, "\r\n") {
			return nil, invalid("header %q is not a header name with a one-line value", name)
		}
		if field, ok := reserved[textproto.CanonicalMIMEHeaderKey(name)]; ok {
			if field != "" {
				return nil, invalid("set header %s through the message's %s field", name, field)
			}
			return nil, invalid("header %s is written by the mailer and cannot be set", name)
		}
		m.SetGenHeader(gomail.Header(name), value)
	}
	domain := "localhost"
	if at := strings.LastIndexByte(sender.Address, '@'); at >= 0 && at < len(sender.Address)-1 {
		domain = sender.Address[at+1:]
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, fmt.Errorf("mail: a Message-ID: %w", err)
	}
	env.MessageID = "<" + id.String() + "@" + domain + ">"
	m.SetMessageIDWithValue(strings.Trim(env.MessageID, "<>"))
	m.SetDateWithValue(now)
	switch {
	case msg.Text != "" && msg.HTML != "":
		m.SetBodyString(gomail.TypeTextPlain, msg.Text)
		m.AddAlternativeString(gomail.TypeTextHTML, msg.HTML)
	case msg.HTML != "":
		m.SetBodyString(gomail.TypeTextHTML, msg.HTML)
	case msg.Text != "":
		m.SetBodyString(gomail.TypeTextPlain, msg.Text)
	default:
		return nil, invalid("the message has no body: set Text, HTML or both")
	}
	for i, a := range msg.Attachments {
		if a.Name == "" || strings.ContainsAny(a.Name, "\r\n\"") {
			return nil, invalid("attachment %d of %d needs a Name of one line, without quotes", i+1, len(msg.Attachments))
		}
		ct := contentType(a)
		if _, _, err := mime.ParseMediaType(ct); err != nil {
			return nil, invalid("attachment %s has the content type %q, which does not parse (%v)", a.Name, ct, err)
		}
		opts := []gomail.FileOption{gomail.WithFileContentType(gomail.ContentType(ct))}
		if a.Inline {
			m.EmbedReadSeeker(a.Name, bytes.NewReader(a.Data), append(opts, gomail.WithFileContentID(a.Name))...)
		} else {
			m.AttachReadSeeker(a.Name, bytes.NewReader(a.Data), opts...)
		}
	}
	var raw bytes.Buffer
	if _, err := m.WriteTo(&raw); err != nil {
		return nil, fmt.Errorf("mail: write the message: %w", err)
	}
	if !utf8.Valid(raw.Bytes()) { // not expected: go-mail encodes bodies as quoted-printable or base64
		return nil, fmt.Errorf("mail: the rendered message is not valid UTF-8")
	}
	return &rendered{Envelope: env, Raw: raw.Bytes()}, nil
}

// commonTypes are the media types of files often mailed that Go's own
// table lacks, so they do not depend on the machine's mime.types.
var commonTypes = map[string]string{
	".csv": "text/csv; charset=utf-8", ".txt": "text/plain; charset=utf-8", ".ics": "text/calendar; charset=utf-8",
	".zip": "application/zip", ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
	".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
}

// contentType is a's media type as it is sent: its own, or the one its
// name's extension says, or application/octet-stream.
func contentType(a Attachment) string {
	if a.ContentType != "" {
		return a.ContentType
	}
	ext := strings.ToLower(path.Ext(a.Name))
	if ct, ok := commonTypes[ext]; ok {
		return ct
	}
	if ct := mime.TypeByExtension(ext); ct != "" {
		return ct
	}
	return "application/octet-stream"
}

// isToken reports whether s is a header field name (RFC 5322: printable
// ASCII but the colon).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		if s[i] <= ' ' || s[i] > '~' || s[i] == ':' {
			return false
		}
	}
	return true
}
