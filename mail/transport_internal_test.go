package mail

import (
	netmail "net/mail"
	"strings"
	"testing"
	"time"
)

func TestTheDefaultPortFollowsTLS(t *testing.T) {
	for _, tt := range []struct {
		tls  string
		port int
		want string
	}{
		{STARTTLS, 0, "smtp mail.example.com:587"},
		{NoTLS, 0, "smtp mail.example.com:587"},
		{TLS, 0, "smtp mail.example.com:465"},
		{TLS, 2465, "smtp mail.example.com:2465"},
	} {
		if got := newSMTP(Config{Host: "mail.example.com", TLS: tt.tls, Port: tt.port}, nil).String(); got != tt.want {
			t.Errorf("tls %s, port %d: %s, want %s", tt.tls, tt.port, got, tt.want)
		}
	}
}

// TestTextBodyOfEachShape: the text body the log transport logs in
// development, of each shape of message render writes; none for an
// HTML-only one; a long one cut at 4 KiB on a character boundary.
func TestTextBodyOfEachShape(t *testing.T) {
	long := strings.Repeat("é", maxLoggedText) // 2 bytes each
	tests := []struct {
		name   string
		give   Message
		want   string
		wantOK bool
	}{
		{"text", Message{Text: "Hi Ada,\r\nyour export: https://crm.example.com/exports/42.csv?a=1&b=2\n"}, "Hi Ada,\nyour export: https://crm.example.com/exports/42.csv?a=1&b=2\n", true},
		{"text and html", Message{Text: "Grüße, Ada", HTML: "<p>Grüße</p>"}, "Grüße, Ada", true},
		{"html only", Message{HTML: "<p>Hi</p>"}, "", false},
		{"with attachments", Message{HTML: "<p>Hi</p>", Attachments: []Attachment{{Name: "notes.txt", Data: []byte("not the body")}}}, "", false},
		{"text with attachments", Message{Text: "See the file.", Attachments: []Attachment{{Name: "notes.txt", Data: []byte("not the body")},
			{Name: "logo.png", ContentType: "image/png", Data: []byte("\x89PNG"), Inline: true}}}, "See the file.", true},
		{"long", Message{Text: long}, long[:maxLoggedText-len("…")-1] + "…", true},
	}
	for _, tt := range tests {
		tt.give.To, tt.give.Subject = []string{"ada@example.com"}, "Hello"
		r, err := render(tt.give, &netmail.Address{Address: "noreply@localhost"}, time.Now())
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got, ok := textBody(r.Raw); got != tt.want || ok != tt.wantOK {
			t.Errorf("%s: textBody = %q, %v; want %q, %v", tt.name, got, ok, tt.want, tt.wantOK)
		}
	}
}
