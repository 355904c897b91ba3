package mailtest

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"net/textproto"
	"strconv"
	"strings"
)

// Message is a mail as it arrived: its envelope, headers, parts and
// attachments, decoded.
type Message struct {
	// Envelope is the SMTP transaction that carried the message. It is
	// zero for a Message from Parse, and filled by Server.Received.
	Envelope Envelope

	// From is the first address of the From header, as a reader would
	// write it: "Navree <noreply@example.com>" when it has a display name,
	// decoded and unquoted, or "noreply@example.com" when it has none. It
	// is meant for comparisons and is not always a valid header value:
	// Header holds the header as it was sent.
	From string
	// To and Cc are the addresses of the To and Cc headers, address only,
	// such as "ada@example.com".
	To, Cc []string
	// ReplyTo is the first address of the Reply-To header, address only.
	ReplyTo string
	// Subject is the Subject header with its RFC 2047 encoded words
	// decoded.
	Subject string
	// MessageID is the Message-ID header as sent, with its angle brackets.
	MessageID string
	// Header is every header of the message as received.
	Header mail.Header

	// Text and HTML are the bodies of the first text/plain and the first
	// text/html part that is not an attachment, transfer-decoded
	// (quoted-printable, base64) and with CRLF line ends turned into LF.
	// They are the bytes the sender wrote, in the charset the part names,
	// which is UTF-8 for a message composed by go-mail.
	Text, HTML string
	// Attachments are the message's other leaf parts, in the order they
	// appear: files attached, inline images, and any further part that
	// is not one of the two bodies.
	Attachments []Attachment

	// Raw is the message as it was given to Parse.
	Raw []byte
}

// Envelope is who the message was sent from and to by the SMTP transaction
// (MAIL FROM and RCPT TO), which includes Bcc recipients the headers do not
// show.
type Envelope struct {
	// From is the MAIL FROM address, empty for a null reverse path.
	From string
	// To are the RCPT TO addresses the server accepted, in order.
	To []string
}

// Attachment is a part of a message other than its text and HTML bodies: a
// file attached, or an inline image the HTML refers to by its Content-ID.
type Attachment struct {
	// Name is the file name, from the Content-Disposition filename
	// parameter or else the Content-Type name parameter, with RFC 2231
	// and RFC 2047 encodings decoded. It is empty for a part with neither.
	Name string
	// ContentType is the part's media type without its parameters, such
	// as "text/csv".
	ContentType string
	// ContentID is the Content-ID header without its angle brackets.
	ContentID string
	// Inline reports whether the part's Content-Disposition is inline.
	Inline bool
	// Data is the part's content, transfer-decoded.
	Data []byte
}

// Parse decodes a raw message, such as one a server or a transport
// received: its headers, its text and HTML bodies and its attachments,
// through multipart parts nested to any depth.
//
// Parse fails for what a mail reader could not decode: a malformed header,
// address or media type, a multipart body without its boundary, or a part
// whose transfer encoding is unknown or broken. The error names the part,
// numbered from 1 and by its position in each enclosing multipart, as in
// "mailtest: parse: part 1.2: ...".
func Parse(raw []byte) (Message, error) {
	m, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return Message{}, fmt.Errorf("mailtest: parse: header: %w", err)
	}
	msg := Message{
		MessageID: strings.TrimSpace(m.Header.Get("Message-Id")),
		Header:    m.Header,
		Raw:       raw,
	}
	var dec mime.WordDecoder
	if msg.Subject, err = dec.DecodeHeader(m.Header.Get("Subject")); err != nil {
		return Message{}, fmt.Errorf("mailtest: parse: Subject: %w", err)
	}

	from, err := addresses(m.Header, "From")
	if err != nil {
		return Message{}, err
	}
	if len(from) > 0 {
		msg.From = from[0].Address
		if from[0].Name != "" {
			msg.From = from[0].Name + " <" + from[0].Address + ">"
		}
	}
	replyTo, err := addresses(m.Header, "Reply-To")
	if err != nil {
		return Message{}, err
	}
	if len(replyTo) > 0 {
		msg.ReplyTo = replyTo[0].Address
	}
	if msg.To, err = addressesOnly(m.Header, "To"); err != nil {
		return Message{}, err
	}
	if msg.Cc, err = addressesOnly(m.Header, "Cc"); err != nil {
		return Message{}, err
	}

	p := parser{dec: &dec, msg: &msg}
	if err := p.part(textproto.MIMEHeader(m.Header), m.Body, ""); err != nil {
		return Message{}, fmt.Errorf("mailtest: parse: %w", err)
	}
	return msg, nil
}

// addresses parses the address list of header key, nil when it is absent.
func addresses(h mail.Header, key string) ([]*mail.Address, error) {
	list, err := h.AddressList(key)
	if errors.Is(err, mail.ErrHeaderNotPresent) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("mailtest: parse: %s: %w", key, err)
	}
	return list, nil
}

// addressesOnly is addresses without their display names.
func addressesOnly(h mail.Header, key string) ([]string, error) {
	list, err := addresses(h, key)
	if err != nil || list == nil {
		return nil, err
	}
	out := make([]string, len(list))
	for i, a := range list {
		out[i] = a.Address
	}
	return out, nil
}

// parser walks the parts of one message into it.
type parser struct {
	dec        *mime.WordDecoder
	msg        *Message
	text, html bool // whether msg.Text and msg.HTML are set
}

// part decodes the part with header h and body r, at path: "" for the
// message's own body, "2" for the second part of a multipart body, "2.1"
// for the first part inside that one.
func (p *parser) part(h textproto.MIMEHeader, r io.Reader, path string) error {
	contentType, params := "text/plain", map[string]string{}
	if v := h.Get("Content-Type"); v != "" {
		var err error
		if contentType, params, err = mime.ParseMediaType(v); err != nil {
			return at(path, fmt.Errorf("Content-Type: %w", err))
		}
	}
	if strings.HasPrefix(contentType, "multipart/") {
		return p.multipart(r, params["boundary"], path)
	}

	data, err := decode(h.Get("Content-Transfer-Encoding"), r)
	if err != nil {
		return at(path, err)
	}
	var disposition string
	dparams := map[string]string{}
	if v := h.Get("Content-Disposition"); v != "" {
		if disposition, dparams, err = mime.ParseMediaType(v); err != nil {
			return at(path, fmt.Errorf("Content-Disposition: %w", err))
		}
	}
	name := dparams["filename"]
	if name == "" {
		name = params["name"]
	}
	if name, err = p.dec.DecodeHeader(name); err != nil {
		return at(path, fmt.Errorf("file name: %w", err))
	}

	body := name == "" && disposition != "attachment"
	switch {
	case body && contentType == "text/plain" && !p.text:
		p.msg.Text, p.text = lf(data), true
	case body && contentType == "text/html" && !p.html:
		p.msg.HTML, p.html = lf(data), true
	default:
		p.msg.Attachments = append(p.msg.Attachments, Attachment{
			Name:        name,
			ContentType: contentType,
			ContentID:   strings.Trim(strings.TrimSpace(h.Get("Content-Id")), "<>"),
			Inline:      disposition == "inline",
			Data:        data,
		})
	}
	return nil
}

// multipart decodes each part of a multipart body in turn.
func (p *parser) multipart(r io.Reader, boundary, path string) error {
	if boundary == "" {
		return at(path, errors.New("multipart body without a boundary"))
	}
	mr := multipart.NewReader(r, boundary)
	for i := 1; ; i++ {
		sub := strconv.Itoa(i)
		if path != "" {
			sub = path + "." + sub
		}
		// NextRawPart, unlike NextPart, leaves quoted-printable to decode.
		part, err := mr.NextRawPart()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return at(sub, err)
		}
		if err := p.part(part.Header, part, sub); err != nil {
			return err
		}
	}
}

// decode reads r undoing the Content-Transfer-Encoding cte.
func decode(cte string, r io.Reader) ([]byte, error) {
	encoding := strings.ToLower(strings.TrimSpace(cte))
	switch encoding {
	case "":
		encoding = "7bit"
	case "7bit", "8bit", "binary":
	case "quoted-printable":
		r = quotedprintable.NewReader(r)
	case "base64":
		r = base64.NewDecoder(base64.StdEncoding, r)
	default:
		return nil, fmt.Errorf("unknown Content-Transfer-Encoding %q", cte)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", encoding, err)
	}
	return data, nil
}

// at names the part at path in err.
func at(path string, err error) error {
	if path == "" {
		return fmt.Errorf("body: %w", err)
	}
	return fmt.Errorf("part %s: %w", path, err)
}

// lf is data as a string with its CRLF line ends turned into LF.
func lf(data []byte) string {
	return strings.ReplaceAll(string(data), "\r\n", "\n")
}
