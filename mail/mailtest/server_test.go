package mailtest_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/emersion/go-smtp"
	gomail "github.com/wneessen/go-mail"

	"github.com/navree/navree/mail/mailtest"
)

// serverTestMsg composes a small message from noreply@example.com to to.
func serverTestMsg(t *testing.T, subject string, to ...string) *gomail.Msg {
	t.Helper()
	m := gomail.NewMsg()
	if err := m.From("Navree <noreply@example.com>"); err != nil {
		t.Fatal(err)
	}
	if err := m.To(to...); err != nil {
		t.Fatal(err)
	}
	m.Subject(subject)
	m.SetBodyString(gomail.TypeTextPlain, "Hello.\n")
	return m
}

// sendToServer sends msgs in one connection to s, with opts after the port.
func sendToServer(t *testing.T, s *mailtest.Server, opts []gomail.Option, msgs ...*gomail.Msg) error {
	t.Helper()
	opts = append([]gomail.Option{gomail.WithPort(s.Port()), gomail.WithTLSPolicy(gomail.NoTLS)}, opts...)
	c, err := gomail.NewClient(s.Host(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c.DialAndSend(msgs...)
}

func TestServerReceives(t *testing.T) {
	s := mailtest.NewServer(t)
	if s.Host() != "127.0.0.1" || s.Addr() != fmt.Sprintf("127.0.0.1:%d", s.Port()) || s.Port() == 0 {
		t.Fatalf("Host %q, Port %d, Addr %q", s.Host(), s.Port(), s.Addr())
	}
	if s.ClientTLSConfig() != nil {
		t.Error("ClientTLSConfig is not nil without WithSTARTTLS")
	}

	m := gomail.NewMsg()
	if err := m.From("Navree <noreply@example.com>"); err != nil {
		t.Fatal(err)
	}
	if err := m.To("Ada <ada@example.com>"); err != nil {
		t.Fatal(err)
	}
	if err := m.Cc("grace@example.com"); err != nil {
		t.Fatal(err)
	}
	if err := m.Bcc("hidden@example.com"); err != nil {
		t.Fatal(err)
	}
	m.Subject("Your report, Ada — ready")
	m.SetMessageIDWithValue("report-1@example.com")
	m.SetBodyString(gomail.TypeTextPlain, "Hello Ada,\nyour report is attached.\n")
	m.AddAlternativeString(gomail.TypeTextHTML, `<p>Hello Ada,</p><img src="cid:logo.png">`)
	csv := []byte("id,name\r\n1,Ada\r\n")
	if err := m.AttachReader("report.csv", bytes.NewReader(csv), gomail.WithFileContentType("text/csv")); err != nil {
		t.Fatal(err)
	}
	png := []byte("\x89PNG\r\n\x1a\n\x00not really")
	if err := m.EmbedReader("logo.png", bytes.NewReader(png), gomail.WithFileContentType("image/png")); err != nil {
		t.Fatal(err)
	}
	if err := sendToServer(t, s, nil, m); err != nil {
		t.Fatal(err)
	}

	got := s.Received()
	if len(got) != 1 {
		t.Fatalf("Received() has %d messages, want 1", len(got))
	}
	r := got[0]
	wantEnv := mailtest.Envelope{
		From: "noreply@example.com",
		To:   []string{"ada@example.com", "grace@example.com", "hidden@example.com"},
	}
	if !reflect.DeepEqual(r.Envelope, wantEnv) {
		t.Errorf("Envelope = %#v, want %#v", r.Envelope, wantEnv)
	}
	checks := []struct{ name, got, want string }{
		{"From", r.From, "Navree <noreply@example.com>"},
		{"Subject", r.Subject, "Your report, Ada — ready"},
		{"MessageID", r.MessageID, "<report-1@example.com>"},
		{"Text", r.Text, "Hello Ada,\nyour report is attached.\n"},
		{"HTML", r.HTML, `<p>Hello Ada,</p><img src="cid:logo.png">`},
		{"Bcc header", r.Header.Get("Bcc"), ""},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
	if want := []string{"ada@example.com"}; !reflect.DeepEqual(r.To, want) {
		t.Errorf("To = %q, want %q", r.To, want)
	}
	if want := []string{"grace@example.com"}; !reflect.DeepEqual(r.Cc, want) {
		t.Errorf("Cc = %q, want %q", r.Cc, want)
	}
	if bytes.Contains(r.Raw, []byte("hidden@")) {
		t.Errorf("the Bcc recipient shows in the message:\n%s", r.Raw)
	}
	wantAtt := []mailtest.Attachment{
		{Name: "logo.png", ContentType: "image/png", ContentID: "logo.png", Inline: true, Data: png},
		{Name: "report.csv", ContentType: "text/csv", Data: csv},
	}
	if !reflect.DeepEqual(r.Attachments, wantAtt) {
		t.Errorf("Attachments = %+v, want %+v", r.Attachments, wantAtt)
	}
}

func TestServerSTARTTLS(t *testing.T) {
	s := mailtest.NewServer(t, mailtest.WithSTARTTLS())
	cfg := s.ClientTLSConfig()
	if cfg == nil || cfg.ServerName != "127.0.0.1" || cfg.RootCAs == nil {
		t.Fatalf("ClientTLSConfig() = %+v", cfg)
	}
	tlsOpts := []gomail.Option{gomail.WithTLSPolicy(gomail.TLSMandatory), gomail.WithTLSConfig(cfg)}
	if err := sendToServer(t, s, tlsOpts, serverTestMsg(t, "Over TLS", "ada@example.com")); err != nil {
		t.Fatal(err)
	}
	got := s.Received()
	if len(got) != 1 || got[0].Subject != "Over TLS" {
		t.Fatalf("Received() = %+v, want the message over TLS", got)
	}

	// Without the server's root, the client does not trust it.
	err := sendToServer(t, s, []gomail.Option{gomail.WithTLSPolicy(gomail.TLSMandatory)}, serverTestMsg(t, "Untrusted", "ada@example.com"))
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("sending without ClientTLSConfig: error %v, want one about the certificate", err)
	}
}

func TestServerWithoutSTARTTLS(t *testing.T) {
	s := mailtest.NewServer(t)
	err := sendToServer(t, s, []gomail.Option{gomail.WithTLSPolicy(gomail.TLSMandatory)}, serverTestMsg(t, "Hi", "ada@example.com"))
	if err == nil {
		t.Error("TLSMandatory succeeded against a server without STARTTLS")
	}
	if n := len(s.Received()); n != 0 {
		t.Errorf("Received() has %d messages, want 0", n)
	}
}

func TestServerAuth(t *testing.T) {
	s := mailtest.NewServer(t, mailtest.WithAuth("ada", "s3cret"))
	auth := func(mech gomail.SMTPAuthType, password string) []gomail.Option {
		return []gomail.Option{gomail.WithSMTPAuth(mech), gomail.WithUsername("ada"), gomail.WithPassword(password)}
	}

	if err := sendToServer(t, s, auth(gomail.SMTPAuthPlain, "s3cret"), serverTestMsg(t, "PLAIN", "grace@example.com")); err != nil {
		t.Errorf("AUTH PLAIN: %v", err)
	}
	if err := sendToServer(t, s, auth(gomail.SMTPAuthLogin, "s3cret"), serverTestMsg(t, "LOGIN", "grace@example.com")); err != nil {
		t.Errorf("AUTH LOGIN: %v", err)
	}
	for _, mech := range []gomail.SMTPAuthType{gomail.SMTPAuthPlain, gomail.SMTPAuthLogin} {
		err := sendToServer(t, s, auth(mech, "wrong"), serverTestMsg(t, "wrong password", "grace@example.com"))
		if err == nil || !strings.Contains(err.Error(), "535") || !strings.Contains(err.Error(), "5.7.8") {
			t.Errorf("%s with a wrong password: error %v, want 535 5.7.8", mech, err)
		}
	}
	err := sendToServer(t, s, nil, serverTestMsg(t, "no AUTH", "grace@example.com"))
	var se *gomail.SendError
	if !errors.As(err, &se) || se.ErrorCode() != 530 || se.EnhancedStatusCode() != "5.7.0" {
		t.Errorf("sending without AUTH: error %v, want a SendError with 530 5.7.0", err)
	}

	var subjects []string
	for _, m := range s.Received() {
		subjects = append(subjects, m.Subject)
	}
	if want := []string{"PLAIN", "LOGIN"}; !reflect.DeepEqual(subjects, want) {
		t.Errorf("received %q, want %q", subjects, want)
	}
}

func TestServerRefuseOnce(t *testing.T) {
	s := mailtest.NewServer(t)
	s.Refuse(1, "451 4.3.0 try again later")

	err := sendToServer(t, s, nil, serverTestMsg(t, "first", "ada@example.com"))
	var se *gomail.SendError
	if !errors.As(err, &se) {
		t.Fatalf("first send: error %v, want a *mail.SendError", err)
	}
	if !se.IsTemp() || se.ErrorCode() != 451 || se.EnhancedStatusCode() != "4.3.0" ||
		!strings.Contains(err.Error(), "try again later") {
		t.Errorf("first send: error %q (temporary %v, code %d %s), want a temporary 451 4.3.0 try again later",
			err, se.IsTemp(), se.ErrorCode(), se.EnhancedStatusCode())
	}
	if n := len(s.Received()); n != 0 {
		t.Errorf("after a refusal, Received() has %d messages, want 0", n)
	}

	if err := sendToServer(t, s, nil, serverTestMsg(t, "second", "ada@example.com")); err != nil {
		t.Fatalf("second send: %v", err)
	}
	if got := s.Received(); len(got) != 1 || got[0].Subject != "second" {
		t.Errorf("Received() = %+v, want the second message", got)
	}
}

func TestServerRefusesAMessageOnce(t *testing.T) {
	s := mailtest.NewServer(t)
	s.Refuse(1, "550 5.1.1 no such user")

	// Both recipients of the first message are refused, and that counts
	// as one refusal: the second message, in the same connection, passes.
	err := sendToServer(t, s, []gomail.Option{gomail.WithoutNoop()},
		serverTestMsg(t, "first", "ada@example.com", "grace@example.com"),
		serverTestMsg(t, "second", "ada@example.com", "grace@example.com"))
	var se *gomail.SendError
	if !errors.As(err, &se) {
		t.Fatalf("error %v, want a *mail.SendError", err)
	}
	if n := strings.Count(err.Error(), "5.1.1 no such user"); n != 2 {
		t.Errorf("error %q has the refusal %d times, want 2 (one a recipient)", err, n)
	}
	got := s.Received()
	if len(got) != 1 || got[0].Subject != "second" ||
		!reflect.DeepEqual(got[0].Envelope.To, []string{"ada@example.com", "grace@example.com"}) {
		t.Errorf("Received() = %+v, want the second message to both", got)
	}
}

func TestServerRefuseAlways(t *testing.T) {
	s := mailtest.NewServer(t)
	s.Refuse(-1, "550 5.1.1 no such user")
	for i := range 3 {
		err := sendToServer(t, s, nil, serverTestMsg(t, "refused", "nobody@example.com"))
		var se *gomail.SendError
		if !errors.As(err, &se) || se.IsTemp() || se.ErrorCode() != 550 || se.EnhancedStatusCode() != "5.1.1" ||
			!strings.Contains(err.Error(), "no such user") {
			t.Errorf("send %d: error %v, want a permanent 550 5.1.1 no such user", i+1, err)
		}
	}
	if n := len(s.Received()); n != 0 {
		t.Errorf("Received() has %d messages, want 0", n)
	}

	s.Refuse(0, "")
	if err := sendToServer(t, s, nil, serverTestMsg(t, "taken", "ada@example.com")); err != nil {
		t.Errorf("after Refuse(0, ...): %v", err)
	}
}

func TestServerRefuseWithoutEnhancedCode(t *testing.T) {
	s := mailtest.NewServer(t)
	s.Refuse(1, "554 no thanks")
	err := sendToServer(t, s, nil, serverTestMsg(t, "refused", "ada@example.com"))
	var se *gomail.SendError
	if !errors.As(err, &se) || se.ErrorCode() != 554 || se.EnhancedStatusCode() != "5.0.0" ||
		!strings.Contains(err.Error(), "no thanks") {
		t.Errorf("error %v, want 554 5.0.0 no thanks", err)
	}
}

func TestRefuseMalformed(t *testing.T) {
	s := mailtest.NewServer(t)
	for _, reply := range []string{
		"",
		"no code",
		"250 2.0.0 fine",
		"600 too high",
		"55 5.1.1 short code",
		"5500 5.1.1 long code",
		"550",
		"550 5.1.1",
		"550 4.1.1 wrong class",
		"451 5.3.0 wrong class",
		"550 5.1 too short",
		"550 5.1.1.1 too long",
		"550 5.1234.1 subject too long",
		"550 55.1.1 class too long",
		"550 5.1.1 two\r\nlines",
	} {
		t.Run(reply, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil {
					t.Fatalf("Refuse(1, %q) did not panic", reply)
				}
				if msg := fmt.Sprint(r); !strings.Contains(msg, fmt.Sprintf("%q", reply)) {
					t.Errorf("panic %q does not name the reply", msg)
				}
			}()
			s.Refuse(1, reply)
		})
	}
	s.Refuse(0, "ignored when n is 0")
}

func TestServerConnections(t *testing.T) {
	s := mailtest.NewServer(t)
	if n := s.Connections(); n != 0 {
		t.Fatalf("Connections() = %d before any send", n)
	}
	for i := 1; i <= 3; i++ {
		if err := sendToServer(t, s, nil, serverTestMsg(t, fmt.Sprint(i), "ada@example.com")); err != nil {
			t.Fatal(err)
		}
		if n := s.Connections(); n != i {
			t.Errorf("after %d sends, Connections() = %d", i, n)
		}
	}
}

func TestServerConcurrentSends(t *testing.T) {
	s := mailtest.NewServer(t)
	const n = 8
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := sendToServer(t, s, nil, serverTestMsg(t, fmt.Sprint(i), "ada@example.com")); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, m := range s.Received() {
		seen[m.Subject] = true
	}
	if len(seen) != n || s.Connections() != n {
		t.Errorf("received %d different messages over %d connections, want %d", len(seen), s.Connections(), n)
	}
}

// TestServerClosedAtCleanup checks the cleanup ends a connection left open
// and stops listening.
func TestServerClosedAtCleanup(t *testing.T) {
	var addr string
	var conn net.Conn
	t.Run("server", func(t *testing.T) {
		s := mailtest.NewServer(t)
		addr = s.Addr()
		var err error
		if conn, err = net.Dial("tcp", addr); err != nil {
			t.Fatal(err)
		}
		// The server's greeting: it accepted the connection, so the
		// cleanup ends an open one (a connection still in the listen
		// queue would be reset with the listener instead).
		if greeting, err := bufio.NewReader(conn).ReadString('\n'); err != nil || !strings.HasPrefix(greeting, "220 ") {
			t.Fatalf("greeting: %q, %v", greeting, err)
		}
	})
	defer conn.Close()
	if _, err := io.ReadAll(conn); err != nil {
		t.Errorf("reading the open connection after the cleanup: %v", err)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Errorf("the server still listens on %s after the cleanup", addr)
	}
}

// errorRecorder is a testing.TB that records Errorf instead of failing.
type errorRecorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *errorRecorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func TestReceivedFailsForAMessageThatDoesNotParse(t *testing.T) {
	rec := &errorRecorder{TB: t}
	s := mailtest.NewServer(rec)
	bad := "From: a@example.com\r\nContent-Type: multipart/mixed\r\n\r\nno boundary\r\n"
	good := "From: a@example.com\r\nSubject: fine\r\n\r\nHello\r\n"
	for _, raw := range []string{bad, good} {
		c, err := smtp.Dial(s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		if err := c.SendMail("a@example.com", []string{"b@example.com"}, strings.NewReader(raw)); err != nil {
			t.Fatal(err)
		}
		if err := c.Quit(); err != nil {
			t.Fatal(err)
		}
	}

	got := s.Received()
	if len(got) != 1 || got[0].Subject != "fine" {
		t.Errorf("Received() = %+v, want the message that parses", got)
	}
	if len(rec.errors) != 1 || !strings.Contains(rec.errors[0], "message 1") ||
		!strings.Contains(rec.errors[0], "mailtest: parse: body: multipart body without a boundary") {
		t.Errorf("errors %q, want one for message 1", rec.errors)
	}
}
