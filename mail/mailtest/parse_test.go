package mailtest_test

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"

	gomail "github.com/wneessen/go-mail"

	"github.com/navree/navree/mail/mailtest"
)

// crlfLines turns the LF line ends of a message written in a Go literal into
// the CRLF of mail on the wire.
func crlfLines(s string) []byte {
	return []byte(strings.ReplaceAll(s, "\n", "\r\n"))
}

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want mailtest.Message // Header and Raw are not compared
	}{
		{
			name: "text/plain, 7bit, headers",
			raw: `From: "Ada Lovelace" <ada@example.com>
To: grace@example.com, Bob <bob@example.com>
Cc: =?UTF-8?Q?Zo=C3=AB?= <zoe@example.com>
Reply-To: Support <support@example.com>, other@example.com
Subject: =?UTF-8?Q?Caf=C3=A9?= au lait
Message-ID: <abc.123@example.com>
Content-Type: text/plain; charset=us-ascii
Content-Transfer-Encoding: 7bit

Hello,
World
`,
			want: mailtest.Message{
				From:      "Ada Lovelace <ada@example.com>",
				To:        []string{"grace@example.com", "bob@example.com"},
				Cc:        []string{"zoe@example.com"},
				ReplyTo:   "support@example.com",
				Subject:   "Café au lait",
				MessageID: "<abc.123@example.com>",
				Text:      "Hello,\nWorld\n",
			},
		},
		{
			name: "no Content-Type is text/plain",
			raw: `From: ada@example.com
Subject: Hi

Plain`,
			want: mailtest.Message{From: "ada@example.com", Subject: "Hi", Text: "Plain"},
		},
		{
			name: "text/html, base64",
			raw: `From: ada@example.com
Content-Type: Text/HTML; charset=UTF-8
Content-Transfer-Encoding: BASE64

PHA+SMOpbGxvLCA8Yj53b3
JsZDwvYj48L3A+DQo=
`,
			want: mailtest.Message{From: "ada@example.com", HTML: "<p>Héllo, <b>world</b></p>\n"},
		},
		{
			name: "text/plain, 8bit",
			raw: `From: ada@example.com
Content-Type: text/plain; charset=utf-8
Content-Transfer-Encoding: 8bit

Grüße
`,
			want: mailtest.Message{From: "ada@example.com", Text: "Grüße\n"},
		},
		{
			name: "multipart/alternative, quoted-printable",
			raw: `From: ada@example.com
Subject: =?ISO-8859-1?Q?Caf=E9?=
MIME-Version: 1.0
Content-Type: multipart/alternative; boundary="alt"

This is the preamble.
--alt
Content-Type: text/plain; charset=UTF-8
Content-Transfer-Encoding: quoted-printable

Caf=C3=A9 is a very long line that the sender wrapped with a soft line =
break.
Second line.
--alt
Content-Type: text/html; charset=UTF-8
Content-Transfer-Encoding: quoted-printable

<p style=3D"color: red">Caf=C3=A9</p>
--alt--
The epilogue.
`,
			want: mailtest.Message{
				From:    "ada@example.com",
				Subject: "Café",
				Text:    "Café is a very long line that the sender wrapped with a soft line break.\nSecond line.",
				HTML:    `<p style="color: red">Café</p>`,
			},
		},
		{
			name: "multipart/mixed, alternative and attachments",
			raw: `From: ada@example.com
Content-Type: multipart/mixed; boundary=mixed

--mixed
Content-Type: multipart/alternative; boundary=alt

--alt
Content-Type: text/plain

Text
--alt
Content-Type: text/html

<p>HTML</p>
--alt--

--mixed
Content-Type: text/csv; charset=utf-8; name="ignored.csv"
Content-Disposition: attachment; filename="=?UTF-8?Q?r=C3=A9port.csv?="
Content-Transfer-Encoding: base64

aWQsbmFtZQ0KMSxBZGENCg==
--mixed
Content-Type: application/octet-stream; name="data.bin"
Content-Transfer-Encoding: base64

AAEC/w==
--mixed
Content-Type: application/pdf
Content-Disposition: attachment; filename*=UTF-8''r%C3%A9sum%C3%A9.pdf
Content-Transfer-Encoding: base64

JVBERi0xLjQgZmFrZQ==
--mixed--
`,
			want: mailtest.Message{
				From: "ada@example.com",
				Text: "Text",
				HTML: "<p>HTML</p>",
				Attachments: []mailtest.Attachment{
					{Name: "réport.csv", ContentType: "text/csv", Data: []byte("id,name\r\n1,Ada\r\n")},
					{Name: "data.bin", ContentType: "application/octet-stream", Data: []byte{0, 1, 2, 0xff}},
					{Name: "résumé.pdf", ContentType: "application/pdf", Data: []byte("%PDF-1.4 fake")},
				},
			},
		},
		{
			name: "multipart/mixed, related with inline images, nested three deep",
			raw: `From: ada@example.com
Content-Type: multipart/mixed; boundary=mixed

--mixed
Content-Type: multipart/related; boundary=related; type="multipart/alternative"

--related
Content-Type: multipart/alternative; boundary=alt

--alt
Content-Type: text/plain; charset=UTF-8
Content-Transfer-Encoding: quoted-printable

See the logo.
--alt
Content-Type: text/html; charset=UTF-8
Content-Transfer-Encoding: quoted-printable

<img src=3D"cid:logo@example.com"><img src=3D"cid:icon">
--alt--
--related
Content-Type: image/png; name="logo.png"
Content-Disposition: inline; filename="logo.png"
Content-ID: <logo@example.com>
Content-Transfer-Encoding: base64

iVBORyBmYWtl
--related
Content-Type: image/png
Content-ID: <icon>
Content-Transfer-Encoding: base64

iVBORyBmYWtl
--related--
--mixed
Content-Type: text/plain
Content-Disposition: attachment

attached notes
--mixed
Content-Type: text/plain
Content-Disposition: inline; filename=notes.txt
Content-Transfer-Encoding: base64

YXR0YWNoZWQgbm90ZXMNCg==
--mixed--
`,
			want: mailtest.Message{
				From: "ada@example.com",
				Text: "See the logo.",
				HTML: `<img src="cid:logo@example.com"><img src="cid:icon">`,
				Attachments: []mailtest.Attachment{
					{Name: "logo.png", ContentType: "image/png", ContentID: "logo@example.com", Inline: true, Data: []byte("\x89PNG fake")},
					{ContentType: "image/png", ContentID: "icon", Data: []byte("\x89PNG fake")},
					{ContentType: "text/plain", Data: []byte("attached notes")},
					{Name: "notes.txt", ContentType: "text/plain", Inline: true, Data: []byte("attached notes\r\n")},
				},
			},
		},
		{
			name: "a single attachment",
			raw: `From: ada@example.com
Content-Type: application/pdf
Content-Disposition: attachment; filename=invoice.pdf
Content-Transfer-Encoding: base64

JVBERi0xLjQgZmFrZQ==
`,
			want: mailtest.Message{
				From: "ada@example.com",
				Attachments: []mailtest.Attachment{
					{Name: "invoice.pdf", ContentType: "application/pdf", Data: []byte("%PDF-1.4 fake")},
				},
			},
		},
		{
			name: "a second text part is an attachment",
			raw: `From: ada@example.com
Content-Type: multipart/mixed; boundary=b

--b

First
--b
Content-Type: text/plain

Second
--b--
`,
			want: mailtest.Message{
				From:        "ada@example.com",
				Text:        "First",
				Attachments: []mailtest.Attachment{{ContentType: "text/plain", Data: []byte("Second")}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := crlfLines(tt.raw)
			got, err := mailtest.Parse(raw)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Raw, raw) {
				t.Errorf("Raw = %q, want the message given", got.Raw)
			}
			if got.Header.Get("From") == "" {
				t.Errorf("Header = %v, without the From header", got.Header)
			}
			got.Header, got.Raw = nil, nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse() =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, raw, want string // want is the error's start
	}{
		{"header", "not a header\n\nbody", "mailtest: parse: header: "},
		{"To", "To: Ada <ada@example.com\n\nbody", "mailtest: parse: To: "},
		{"From", "From: @\n\nbody", "mailtest: parse: From: "},
		{"Subject", "Subject: =?x-unknown?Q?abc?=\n\nbody", "mailtest: parse: Subject: "},
		{"Content-Type", "Content-Type: text/plain; charset\n\nbody", "mailtest: parse: body: Content-Type: "},
		{"no boundary", "Content-Type: multipart/mixed\n\n--b\n\nx\n--b--\n", "mailtest: parse: body: multipart body without a boundary"},
		{"unknown encoding", "Content-Transfer-Encoding: x-uuencode\n\nbody", `mailtest: parse: body: unknown Content-Transfer-Encoding "x-uuencode"`},
		{
			"base64 in part 2",
			"Content-Type: multipart/mixed; boundary=b\n\n--b\n\ntext\n--b\nContent-Transfer-Encoding: base64\n\n!!!!\n--b--\n",
			"mailtest: parse: part 2: base64: ",
		},
		{
			"nested part 1.2",
			"Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: multipart/alternative; boundary=c\n\n" +
				"--c\n\ntext\n--c\nContent-Type: text/html; charset\n\n<p>\n--c--\n--b--\n",
			"mailtest: parse: part 1.2: Content-Type: ",
		},
		{
			"Content-Disposition",
			"Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Disposition: attachment; filename\n\nx\n--b--\n",
			"mailtest: parse: part 1: Content-Disposition: ",
		},
		{
			"no closing boundary",
			"Content-Type: multipart/mixed; boundary=b\n\n--b\n\ntext\n",
			"mailtest: parse: part 1: ",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := mailtest.Parse(crlfLines(tt.raw))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("Parse() error = %v, want one starting %q", err, tt.want)
			}
		})
	}
}

// TestParseGoMail parses what go-mail, which the framework sends with,
// writes.
func TestParseGoMail(t *testing.T) {
	m := gomail.NewMsg()
	if err := m.FromFormat("Zoë of Navree", "noreply@example.com"); err != nil {
		t.Fatal(err)
	}
	if err := m.To("Ada <ada@example.com>", "grace@example.com"); err != nil {
		t.Fatal(err)
	}
	if err := m.Cc("bob@example.com"); err != nil {
		t.Fatal(err)
	}
	if err := m.ReplyTo("Support <support@example.com>"); err != nil {
		t.Fatal(err)
	}
	m.Subject("Your résumé — received")
	m.SetMessageIDWithValue("42@example.com")
	text := "Hello Ada,\n\nwe received your résumé. A line long enough that quoted-printable has to wrap it, " +
		"since it runs past seventy-six characters.\n"
	m.SetBodyString(gomail.TypeTextPlain, text)
	html := `<p>Hello Ada,</p><p>we received your résumé.</p><img src="cid:logo.png">`
	m.AddAlternativeString(gomail.TypeTextHTML, html)
	pdf := bytes.Repeat([]byte("%PDF-1.4 \x00\xff"), 100)
	if err := m.AttachReader("résumé.pdf", bytes.NewReader(pdf), gomail.WithFileContentType("application/pdf")); err != nil {
		t.Fatal(err)
	}
	png := []byte("\x89PNG\r\n\x1a\n")
	if err := m.EmbedReader("logo.png", bytes.NewReader(png), gomail.WithFileContentType("image/png")); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := m.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}

	got, err := mailtest.Parse(buf.Bytes())
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.Bytes())
	}
	if !strings.HasPrefix(got.Header.Get("User-Agent"), "go-mail") {
		t.Errorf("User-Agent = %q", got.Header.Get("User-Agent"))
	}
	got.Header, got.Raw = nil, nil
	want := mailtest.Message{
		From:      "Zoë of Navree <noreply@example.com>",
		To:        []string{"ada@example.com", "grace@example.com"},
		Cc:        []string{"bob@example.com"},
		ReplyTo:   "support@example.com",
		Subject:   "Your résumé — received",
		MessageID: "<42@example.com>",
		Text:      text,
		HTML:      html,
		Attachments: []mailtest.Attachment{
			{Name: "logo.png", ContentType: "image/png", ContentID: "logo.png", Inline: true, Data: png},
			{Name: "résumé.pdf", ContentType: "application/pdf", Data: pdf},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parse() =\n%+v\nwant\n%+v\nfrom\n%s", got, want, buf.Bytes())
	}
}

func ExampleParse() {
	raw := "From: Navree <noreply@example.com>\r\n" +
		"To: ada@example.com\r\n" +
		"Subject: =?UTF-8?Q?Bienvenue,_Ad=C3=A9la=C3=AFde?=\r\n" +
		"Content-Type: multipart/mixed; boundary=b\r\n" +
		"\r\n" +
		"--b\r\n" +
		"Content-Type: text/plain; charset=UTF-8\r\n" +
		"Content-Transfer-Encoding: quoted-printable\r\n" +
		"\r\n" +
		"Your account is r=C3=A9ady.\r\n" +
		"--b\r\n" +
		"Content-Type: text/csv; name=\"contacts.csv\"\r\n" +
		"Content-Disposition: attachment; filename=\"contacts.csv\"\r\n" +
		"Content-Transfer-Encoding: base64\r\n" +
		"\r\n" +
		"aWQsbmFtZQ0KMSxBZGENCg==\r\n" +
		"--b--\r\n"
	m, err := mailtest.Parse([]byte(raw))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.From, m.To)
	fmt.Println(m.Subject)
	fmt.Printf("%q\n", m.Text)
	for _, a := range m.Attachments {
		fmt.Printf("%s %s %q\n", a.Name, a.ContentType, a.Data)
	}
	// Output:
	// Navree <noreply@example.com> [ada@example.com]
	// Bienvenue, Adélaïde
	// "Your account is réady."
	// contacts.csv text/csv "id,name\r\n1,Ada\r\n"
}
