package mail_test

import (
	"bytes"
	"context"
	"io"
	"mime"
	"mime/multipart"
	netmail "net/mail"
	"net/textproto"
	"strings"
	"testing"

	"github.com/navree/navree/mail"
)

// parsedPart is a leaf part of a message, as the standard library reads it.
type parsedPart struct {
	header textproto.MIMEHeader
	body   []byte
}

// leafParts reads the leaf parts of a message body of media type ct with
// mime/multipart.
func leafParts(t *testing.T, header textproto.MIMEHeader, body io.Reader) []parsedPart {
	t.Helper()
	mediaType, params, err := mime.ParseMediaType(header.Get("Content-Type"))
	if err != nil {
		t.Fatalf("Content-Type %q: %v", header.Get("Content-Type"), err)
	}
	if !strings.HasPrefix(mediaType, "multipart/") {
		data, err := io.ReadAll(body)
		if err != nil {
			t.Fatal(err)
		}
		return []parsedPart{{header, data}}
	}
	var parts []parsedPart
	mr := multipart.NewReader(body, params["boundary"])
	for {
		p, err := mr.NextRawPart()
		if err == io.EOF {
			return parts
		}
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, leafParts(t, p.Header, p)...)
	}
}

// TestWhatIsSentIsReadAsSent: what the mailer writes, parsed by the
// standard library's RFC parsers, gives back what was given: each
// subject, however long, non-ASCII or spaced, decodes to exactly itself
// with no line over 998 octets; file names are RFC 2231 parameters, not
// encoded-words in quotes; an inline file's Content-ID is in angle
// brackets, as cid: links need.
func TestWhatIsSentIsReadAsSent(t *testing.T) {
	t.Parallel()
	m, err := mail.New(mail.Params{Config: mail.Config{Transport: mail.Memory, From: "CRM <noreply@crm.example.com>"}})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{
		"contacts.csv",
		"Q1 report (final).pdf",
		"Übersicht März 2026.csv",
		strings.Repeat("Größe ", 30) + ".txt", // over one line, in RFC 2231 continuations
		"logo.png",
	}
	subjects := []string{
		strings.Repeat("x", 1200), // a single word over 998 octets
		"Grüße aus Köln: Ihr Export mit allen Kontakten des letzten Quartals ist fertig und wartet auf Sie, Åsa Öberg",
		"Your export of every contact in the Northern region for the last quarter is ready to download now, Ada",
		"Your export  of the region   with  double  spaces, long enough to need folding at one of its single spaces",
		"  leading and trailing spaces  ",
		"a subject that holds =?UTF-8?q?what_looks_encoded?= but is not",
		"日本語の件名はとても長いのでいくつかのエンコードされた単語に分けて折り返す必要があります。日本語の件名はとても長い",
	}
	for _, subject := range subjects {
		msg := mail.Message{To: []string{"Åsa Öberg <asa@example.com>"}, Subject: subject, Text: "Hi",
			HTML: `<p>Hi</p><img src="cid:logo.png">`}
		for _, name := range names {
			msg.Attachments = append(msg.Attachments, mail.Attachment{Name: name, Data: []byte(name), Inline: name == "logo.png"})
		}
		if err := m.Send(context.Background(), msg); err != nil {
			t.Fatalf("Send %.40q: %v", subject, err)
		}
	}
	sent := m.Memory().Sent()
	if len(sent) != len(subjects) {
		t.Fatalf("sent %d messages, want %d", len(sent), len(subjects))
	}
	for i, s := range sent {
		raw, subject := s.Raw, subjects[i]
		for n, line := range strings.Split(string(raw), "\r\n") {
			if len(line) > 998 {
				t.Errorf("subject %.40q: line %d is %d octets: %.80s…", subject, n+1, len(line), line)
			}
		}
		msg, err := netmail.ReadMessage(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		got, err := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
		if err != nil || got != subject {
			t.Errorf("the subject decodes to %q (%v), want %q", got, err, subject)
		}
		if bytes.Contains(raw, []byte("\r\nSubject:\r\n")) || bytes.Contains(raw, []byte("\r\nSubject:  ")) {
			t.Errorf("subject %.40q: the first line of Subject holds no word:\n%s", subject, raw[:bytes.Index(raw, []byte("\r\n\r\n"))])
		}

		files := map[string]parsedPart{}
		for _, p := range leafParts(t, textproto.MIMEHeader(msg.Header), msg.Body) {
			disposition, dparams, err := mime.ParseMediaType(p.header.Get("Content-Disposition"))
			if err != nil || disposition == "" {
				continue // a body
			}
			_, tparams, err := mime.ParseMediaType(p.header.Get("Content-Type"))
			if err != nil {
				t.Fatal(err)
			}
			if dparams["filename"] != tparams["name"] {
				t.Errorf("filename %q, but name %q", dparams["filename"], tparams["name"])
			}
			for _, h := range []string{"Content-Disposition", "Content-Type"} {
				if strings.Contains(p.header.Get(h), "=?") {
					t.Errorf("%s holds an encoded-word: %s", h, p.header.Get(h))
				}
			}
			files[dparams["filename"]] = p
		}
		for _, name := range names {
			if _, ok := files[name]; !ok {
				t.Errorf("no file named %q; files: %v", name, files)
			}
		}
		if got := files["logo.png"].header.Get("Content-Id"); got != "<logo.png>" {
			t.Errorf("the inline file's Content-ID is %q, want <logo.png>", got)
		}
	}
}
