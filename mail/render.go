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
	m.SetGenHeaderPreformatted(gomail.HeaderSubject, subjectValue(msg.Subject))
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
		if a.Inline && !isContentID(a.Name) {
			return nil, invalid("inline attachment %d of %d is named %q: an inline file's Name is its Content-ID, of ASCII letters, digits and !#$%%&'*+-./=?^_`{|}~@ only", i+1, len(msg.Attachments), a.Name)
		}
		if a.Inline {
			m.EmbedReadSeeker(a.Name, bytes.NewReader(a.Data), fileHeader(a, ct))
		} else {
			m.AttachReadSeeker(a.Name, bytes.NewReader(a.Data), fileHeader(a, ct))
		}
	}
	var raw bytes.Buffer
	if _, err := m.WriteTo(&raw); err != nil {
		return nil, fmt.Errorf("mail: write the message: %w", err)
	}
	if name, n := longestHeaderLine(raw.Bytes()); n > maxLine {
		return nil, invalid("header %s would have a line of %d octets, over the %d a line may hold (RFC 5322)", name, n, maxLine)
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

// maxLine is the longest line RFC 5322 allows, without its CRLF.
const maxLine = 998

// foldWidth is the width RFC 5322 asks header lines to keep to.
const foldWidth = 78

// subjectValue is the Subject header's value for s, which a reader
// unfolds and decodes to exactly s, in lines of at most 78 octets where
// it can, 998 at most. Printable ASCII is folded at single spaces, the
// first word on the Subject line; anything else (a word too long for a
// line, a space at either end, non-ASCII text, text that reads as an
// encoded-word) is written as RFC 2047 encoded-words, one a line.
func subjectValue(s string) string {
	if folded, ok := foldASCII(s, len("Subject: ")); ok {
		return folded
	}
	return encodedWords(s, len("Subject: "))
}

// foldASCII folds s, printable ASCII, at single spaces between words, so
// that lines stay within foldWidth where its words allow, the first after
// used octets. It reports false for text it cannot write so: not
// printable ASCII, a space at either end, "=?", or a line over maxLine.
func foldASCII(s string, used int) (string, bool) {
	if s == "" || s[0] == ' ' || s[len(s)-1] == ' ' || strings.Contains(s, "=?") {
		return "", false
	}
	var b strings.Builder
	start, fold := 0, -1 // s[start:] is on the current line; fold, a space to fold before
	for i := range len(s) {
		if s[i] < ' ' || s[i] > '~' {
			return "", false
		}
		if s[i] == ' ' && s[i-1] != ' ' && s[i+1] != ' ' && i > start {
			fold = i
		}
		if used+i-start+1 > foldWidth && fold > start {
			if used+fold-start > maxLine {
				return "", false
			}
			b.WriteString(s[start:fold])
			b.WriteString("\r\n")
			start, used, fold = fold, 0, -1
		}
	}
	if used+len(s)-start > maxLine {
		return "", false
	}
	b.WriteString(s[start:])
	return b.String(), true
}

// encodedWords writes s as RFC 2047 encoded-words in UTF-8 and the Q
// encoding, each of whole characters, on lines of at most foldWidth
// octets, the first after used octets. Readers drop the folding between
// encoded-words, so they decode it to s.
func encodedWords(s string, used int) string {
	const open, end = "=?UTF-8?q?", "?="
	var b, word strings.Builder
	budget := min(foldWidth-used, 75) - len(open) - len(end) // RFC 2047: 75 octets a word
	flush := func() {
		if b.Len() > 0 {
			b.WriteString("\r\n ")
		}
		b.WriteString(open + word.String() + end)
		word.Reset()
		budget = min(foldWidth-1, 75) - len(open) - len(end)
	}
	for _, r := range s {
		var q string
		switch {
		case r == ' ':
			q = "_"
		case r > ' ' && r <= '~' && r != '=' && r != '?' && r != '_':
			q = string(r)
		default:
			for _, c := range []byte(string(r)) {
				q += fmt.Sprintf("=%02X", c)
			}
		}
		if word.Len()+len(q) > budget {
			flush()
		}
		word.WriteString(q)
	}
	flush()
	return b.String()
}

// fileHeader writes a's MIME headers: its media type and disposition with
// its name as a parameter (RFC 2231 when it is not short printable
// ASCII), and the Content-ID <Name> of an inline file, which the HTML
// refers to as cid:Name (RFC 2392).
func fileHeader(a Attachment, ct string) gomail.FileOption {
	return func(f *gomail.File) {
		mediaType, params, _ := mime.ParseMediaType(ct) // checked by render
		delete(params, "name")
		typ := mime.FormatMediaType(mediaType, params)
		if typ == "" {
			typ = mediaType
		}
		disposition := "attachment"
		if a.Inline {
			disposition = "inline"
			f.Header.Set("Content-ID", "<"+a.Name+">")
		}
		f.Header.Set("Content-Type", typ+";\r\n "+strings.Join(param("name", a.Name), ";\r\n "))
		f.Header.Set("Content-Disposition", disposition+";\r\n "+strings.Join(param("filename", a.Name), ";\r\n "))
	}
}

// param is the MIME parameter name=value: a quoted string for short
// printable ASCII, else RFC 2231's UTF-8 percent-encoded form, in
// continuations (name*0*=, name*1*=…) of at most 60 octets of whole
// characters.
func param(name, value string) []string {
	const most = 60
	ascii := len(value) <= most
	for i := 0; ascii && i < len(value); i++ {
		ascii = value[i] >= ' ' && value[i] <= '~'
	}
	if ascii {
		return []string{name + `="` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(value) + `"`}
	}
	var segments []string
	var seg strings.Builder
	for _, r := range value {
		var enc string
		for _, c := range []byte(string(r)) {
			if c < 0x80 && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$&+-.^_`|~", c) >= 0) {
				enc += string(rune(c))
			} else {
				enc += fmt.Sprintf("%%%02X", c)
			}
		}
		if seg.Len()+len(enc) > most {
			segments = append(segments, seg.String())
			seg.Reset()
		}
		seg.WriteString(enc)
	}
	segments = append(segments, seg.String())
	if len(segments) == 1 {
		return []string{name + "*=utf-8''" + segments[0]}
	}
	for i, sg := range segments {
		if i == 0 {
			sg = "utf-8''" + sg
		}
		segments[i] = fmt.Sprintf("%s*%d*=%s", name, i, sg)
	}
	return segments
}

// isContentID reports whether name can be a Content-ID between angle
// brackets: RFC 5322 atext, dots and an '@'.
func isContentID(name string) bool {
	for i := range len(name) {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-./=?^_`{|}~@", c) >= 0) {
			return false
		}
	}
	return name != ""
}

// longestHeaderLine returns the longest line of raw's header, without its
// CRLF, and the field it belongs to.
func longestHeaderLine(raw []byte) (field string, n int) {
	header, _, _ := bytes.Cut(raw, []byte("\r\n\r\n"))
	var current string
	for _, line := range strings.Split(string(header), "\r\n") {
		if line != "" && line[0] != ' ' && line[0] != '\t' {
			current, _, _ = strings.Cut(line, ":")
		}
		if len(line) > n {
			field, n = current, len(line)
		}
	}
	return field, n
}
