package mail_test

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/navree/navree/mail"
	"github.com/navree/navree/testing/apptest"
	"go.uber.org/fx"
)

// fakeSMTP is an SMTP server written here, on 127.0.0.1, that a test
// makes slow, broken, hostile or strict: what mailtest's well-behaved
// server cannot be. By default it greets, says EHLO with the extensions
// it has, takes MAIL, RCPT and DATA, and records what it received.
type fakeSMTP struct {
	t    *testing.T
	ln   net.Listener
	addr *net.TCPAddr

	// Set before the first connection.
	delay    time.Duration                   // before each reply, the greeting included
	greet    func(w io.Writer)               // writes the greeting; "220 fake ESMTP" when nil
	tls      *tls.Config                     // offered by STARTTLS when set
	implicit bool                            // TLS from the first byte, with tls
	answer   func(cmd string) (string, bool) // a reply of its own to cmd, such as "535 …"; false for the default one

	mu       sync.Mutex
	helos    []string
	received []string
	conns    []net.Conn
	wg       sync.WaitGroup
}

func newFakeSMTP(t *testing.T, setup func(f *fakeSMTP)) *fakeSMTP {
	t.Helper()
	f := &fakeSMTP{t: t}
	if setup != nil {
		setup(f)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.ln, f.addr = ln, ln.Addr().(*net.TCPAddr)
	f.wg.Add(1)
	go f.serve()
	t.Cleanup(func() {
		ln.Close()
		f.mu.Lock()
		for _, c := range f.conns {
			c.Close()
		}
		f.mu.Unlock()
		f.wg.Wait()
	})
	return f
}

func (f *fakeSMTP) Addr() string { return f.addr.String() }

// settings are the [mail] settings of the smtp transport to f.
func (f *fakeSMTP) settings(tlsMode string) map[string]any {
	return map[string]any{"transport": "smtp", "host": "127.0.0.1", "port": f.addr.Port, "tls": tlsMode,
		"from": "CRM <noreply@crm.example.com>"}
}

func (f *fakeSMTP) Helos() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.helos...)
}

func (f *fakeSMTP) Received() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.received...)
}

func (f *fakeSMTP) serve() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		if f.implicit {
			c = tls.Server(c, f.tls)
		}
		f.mu.Lock()
		f.conns = append(f.conns, c)
		f.mu.Unlock()
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			defer c.Close()
			f.session(c)
		}()
	}
}

// session serves one connection until the client quits or leaves.
func (f *fakeSMTP) session(c net.Conn) {
	r := bufio.NewReader(c)
	say := func(reply string) bool {
		time.Sleep(f.delay)
		_, err := io.WriteString(c, reply+"\r\n")
		return err == nil
	}
	time.Sleep(f.delay)
	if f.greet != nil {
		f.greet(c)
	} else if _, err := io.WriteString(c, "220 fake ESMTP\r\n"); err != nil {
		return
	}
	helo, tlsOn := "", f.implicit
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		cmd := strings.TrimRight(line, "\r\n")
		verb := strings.ToUpper(strings.Fields(cmd + " x")[0])
		if verb == "EHLO" || verb == "HELO" {
			helo = strings.TrimSpace(cmd[4:])
			f.mu.Lock()
			f.helos = append(f.helos, helo)
			f.mu.Unlock()
		}
		if reply, ok := f.answerFor(cmd, helo); ok {
			if !say(reply) {
				return
			}
			continue
		}
		switch verb {
		case "EHLO":
			ext := []string{"250-fake", "250-8BITMIME"}
			if f.tls != nil && !tlsOn {
				ext = append(ext, "250-STARTTLS")
			}
			ext = append(ext, "250 AUTH PLAIN LOGIN")
			if !say(strings.Join(ext, "\r\n")) {
				return
			}
		case "STARTTLS":
			if !say("220 2.0.0 go ahead") {
				return
			}
			tc := tls.Server(c, f.tls)
			if tc.Handshake() != nil {
				return
			}
			c, r, tlsOn = tc, bufio.NewReader(tc), true
		case "DATA":
			if !say("354 go ahead") {
				return
			}
			var msg strings.Builder
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" {
					break
				}
				msg.WriteString(strings.TrimPrefix(l, "."))
			}
			f.mu.Lock()
			f.received = append(f.received, msg.String())
			f.mu.Unlock()
			if !say("250 2.0.0 queued") {
				return
			}
		case "QUIT":
			say("221 2.0.0 bye")
			return
		default:
			if !say("250 2.0.0 ok") {
				return
			}
		}
	}
}

func (f *fakeSMTP) answerFor(cmd, helo string) (string, bool) {
	if f.answer == nil {
		return "", false
	}
	return f.answer(cmd + "\x00" + helo)
}

// send sends a short message through the smtp transport configured by
// settings, with the mailer New builds, and returns its error.
func send(t *testing.T, settings map[string]any) error {
	t.Helper()
	a := newApp(t, apptest.TempDatabase(), settings)
	return a.Mailer.Send(context.Background(), mail.Message{To: []string{"ada@example.com"}, Subject: "Hello", Text: "Hi Ada"})
}

// TestTimeoutBoundsEachCommand: [mail] timeout is each command's, not the
// session's, and send_timeout bounds the session.
func TestTimeoutBoundsEachCommand(t *testing.T) {
	t.Parallel()
	slow := newFakeSMTP(t, func(f *fakeSMTP) { f.delay = 400 * time.Millisecond })
	settings := slow.settings("none")
	settings["timeout"] = "2s" // each reply comes in 0.4 s (five times that on a loaded machine); the whole send takes about 3 s
	if err := send(t, settings); err != nil {
		t.Fatalf("a server that answers each command in 0.4 s, with a 2 s timeout: %v", err)
	}
	if n := len(slow.Received()); n != 1 {
		t.Fatalf("the slow server received %d messages, want 1", n)
	}

	settings["timeout"], settings["send_timeout"] = "5s", "1s"
	err := send(t, settings)
	if err == nil || !strings.HasPrefix(err.Error(), "mail: smtp "+slow.Addr()+": ") ||
		!strings.HasSuffix(err.Error(), ": the send took over mail.send_timeout (1s): context deadline exceeded") ||
		!errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a send over send_timeout: %v", err)
	}

	mute := newFakeSMTP(t, func(f *fakeSMTP) {
		f.answer = func(cmd string) (string, bool) {
			if strings.HasPrefix(cmd, "MAIL FROM") {
				time.Sleep(2 * time.Second) // longer than the timeout below
			}
			return "", false
		}
	})
	settings = mute.settings("none")
	settings["timeout"] = "300ms"
	if err := send(t, settings); err == nil ||
		err.Error() != "mail: smtp "+mute.Addr()+": MAIL FROM: the server did not respond within mail.timeout (300ms): i/o timeout" {
		t.Fatalf("a server that does not answer MAIL FROM: %v", err)
	}
}

// TestAReplyThatNeverEndsEndsTheAttempt: a greeting or reply line that
// never ends, or a reply of endless lines, fails the attempt once the
// transport has read 4 KiB of the line, or 100 lines.
func TestAReplyThatNeverEndsEndsTheAttempt(t *testing.T) {
	t.Parallel()
	const huge = 16 << 20 // more than enough to exhaust a worker that reads it whole, yet bounded for the test
	tests := []struct {
		name  string
		setup func(f *fakeSMTP)
		want  string
	}{
		{"a greeting that never ends", func(f *fakeSMTP) {
			f.greet = func(w io.Writer) {
				io.WriteString(w, "220 ")
				chunk := strings.Repeat("a", 64<<10)
				for n := 0; n < huge; n += len(chunk) {
					if _, err := io.WriteString(w, chunk); err != nil {
						return
					}
				}
			}
		}, "connect: greeting: the server's reply has a line over 4096 octets (RFC 5321 allows 512)"},
		{"an EHLO reply line of megabytes", func(f *fakeSMTP) {
			f.answer = func(cmd string) (string, bool) {
				if strings.HasPrefix(cmd, "EHLO") {
					return "250-" + strings.Repeat("x", huge) + "\r\n250 ok", true
				}
				return "", false
			}
		}, "connect: EHLO crm.example.com: the server's reply has a line over 4096 octets (RFC 5321 allows 512)"},
		{"a MAIL FROM reply of endless lines", func(f *fakeSMTP) {
			f.answer = func(cmd string) (string, bool) {
				if strings.HasPrefix(cmd, "MAIL FROM") {
					return strings.Repeat("250-ok\r\n", 10000) + "250 ok", true
				}
				return "", false
			}
		}, "MAIL FROM: the server's reply has over 100 lines"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeSMTP(t, tt.setup)
			settings := f.settings("none")
			settings["timeout"] = "10s"
			if err := send(t, settings); err == nil || err.Error() != "mail: smtp "+f.Addr()+": "+tt.want {
				t.Fatalf("Send: %v\nwant: mail: smtp %s: %s", err, f.Addr(), tt.want)
			}
		})
	}
}

// postfixHelo answers as Postfix with reject_non_fqdn_helo_hostname (and
// smtpd_delay_reject, its default): the RCPT of a client whose HELO name
// is not a fully qualified domain name gets 504.
func postfixHelo(cmd string) (string, bool) {
	line, helo, _ := strings.Cut(cmd, "\x00")
	if strings.HasPrefix(line, "RCPT TO") && !strings.Contains(helo, ".") {
		return "504 5.5.2 <" + helo + ">: Helo command rejected: need fully-qualified hostname", true
	}
	return "", false
}

func TestTheHeloNameIsTheFromDomainOrHelo(t *testing.T) {
	t.Parallel()
	strict := newFakeSMTP(t, func(f *fakeSMTP) { f.answer = postfixHelo })
	if err := send(t, strict.settings("none")); err != nil {
		t.Fatalf("Send to a server that wants a fully qualified HELO name: %v", err)
	}
	settings := strict.settings("none")
	settings["helo"] = "mx1.crm.example.com"
	if err := send(t, settings); err != nil {
		t.Fatalf("Send with helo = %q: %v", settings["helo"], err)
	}
	if got := strings.Join(strict.Helos(), " "); got != "crm.example.com mx1.crm.example.com" {
		t.Fatalf("the server was greeted as %q, want the domain of from, then helo", got)
	}
	if n := len(strict.Received()); n != 2 {
		t.Fatalf("the server received %d messages, want 2", n)
	}
}

// privateCA makes a certificate authority of the test's own, writes its
// certificate to a PEM file and returns the file and a server TLS
// configuration with a certificate it signed for names.
func privateCA(t *testing.T, names ...string) (caFile string, server *tls.Config) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "CRM private CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ = x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return caFile, &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
}

func TestAServerCertificateOfAPrivateCA(t *testing.T) {
	t.Parallel()
	caFile, serverTLS := privateCA(t, "smtp.internal")
	for _, mode := range []string{"starttls", "tls"} {
		t.Run(mode, func(t *testing.T) {
			f := newFakeSMTP(t, func(f *fakeSMTP) { f.tls, f.implicit = serverTLS, mode == "tls" })
			step := "connect: STARTTLS: "
			if mode == "tls" {
				step = "connect: "
			}
			settings := f.settings(mode)
			settings["tls_server_name"] = "smtp.internal"
			err := send(t, settings)
			if want := "mail: smtp " + f.Addr() + ": " + step + "tls: failed to verify certificate: x509: certificate signed by unknown authority; " +
				"if a private CA signed the server's certificate, set mail.tls_ca_file to that CA's PEM file"; err == nil || err.Error() != want {
				t.Fatalf("without tls_ca_file: %v\nwant: %s", err, want)
			}
			settings["tls_ca_file"] = caFile
			delete(settings, "tls_server_name")
			err = send(t, settings)
			if want := "mail: smtp " + f.Addr() + ": " + step + "tls: failed to verify certificate: x509: cannot validate certificate for 127.0.0.1 because it doesn't contain any IP SANs; " +
				"set mail.tls_server_name to a name the certificate holds"; err == nil || err.Error() != want {
				t.Fatalf("without tls_server_name: %v\nwant: %s", err, want)
			}
			settings["tls_server_name"] = "smtp.internal"
			if err := send(t, settings); err != nil {
				t.Fatalf("with tls_ca_file and tls_server_name: %v", err)
			}
			if n := len(f.Received()); n != 1 {
				t.Fatalf("the server received %d messages, want 1", n)
			}
		})
	}
}

// TestNoPasswordIsShown: a password never reaches an error, a log line or
// a job's stored error, whatever key holds it and whatever a server
// echoes.
func TestNoPasswordIsShown(t *testing.T) {
	t.Run("in mail.host", func(t *testing.T) {
		for _, tt := range []struct{ host, password, shown string }{
			{"smtp://crm:hunter2@smtp.example.com:587", "hunter2", "smtp://xxxxx@smtp.example.com:587"},
			{"crm:hunter2@smtp.example.com", "hunter2", "xxxxx@smtp.example.com"},
			{"smtp://crm:p%40ss%3Aw%2Frd@smtp.example.com", "p%40ss%3Aw%2Frd", "smtp://xxxxx@smtp.example.com"},
			{"crm:p@ss:w/rd#1@smtp.example.com", "p@ss:w/rd#1", "xxxxx@smtp.example.com"},
			{"smtp.example.com:587", "", "smtp.example.com:587"},
		} {
			err := boot(t, []string{"APP_MAIL__TRANSPORT=smtp", "APP_MAIL__FROM=noreply@crm.example.com", "APP_MAIL__HOST=" + tt.host}, nil)
			want := `config: invalid value for mail.host: "` + tt.shown + `" (from env APP_MAIL__HOST); allowed: the SMTP server's host name or IP address alone, ` +
				`such as "smtp.example.com": the user goes in mail.username, the password in mail.password (APP_MAIL__PASSWORD), the port in mail.port and the TLS mode in mail.tls`
			if err == nil || !strings.HasSuffix(err.Error(), want) {
				t.Errorf("host = %q: the boot error is\n%v\nwant it to end:\n%s", tt.host, err, want)
			}
			if err != nil && tt.password != "" && (strings.Contains(err.Error(), tt.password) || strings.Contains(err.Error(), "crm:")) {
				t.Errorf("host = %q: the error shows the user or password: %v", tt.host, err)
			}
		}
	})

	// A server that echoes the login it was sent, as received and decoded,
	// in its refusal: the error, the worker's log, the job's stored
	// error and mail:test show none of it.
	const password = `p@ss:w/rd "x'y"%20&z`
	secrets := []string{password, base64.StdEncoding.EncodeToString([]byte("\x00crm\x00" + password)),
		base64.StdEncoding.EncodeToString([]byte(password))}
	eachDatabase(t, func(t *testing.T, database fx.Option) {
		caFile, serverTLS := privateCA(t, "localhost")
		echo := newFakeSMTP(t, func(f *fakeSMTP) {
			f.tls = serverTLS
			f.answer = func(cmd string) (string, bool) {
				line, _, _ := strings.Cut(cmd, "\x00")
				if arg, ok := strings.CutPrefix(line, "AUTH PLAIN "); ok {
					decoded, _ := base64.StdEncoding.DecodeString(arg)
					return "535 5.7.8 bad login " + arg + " (" + strings.ReplaceAll(string(decoded), "\x00", " ") + ")", true
				}
				return "", false
			}
		})
		settings := echo.settings("starttls")
		settings["host"], settings["username"], settings["password"] = "localhost", "crm", password
		pemCA, err := os.ReadFile(caFile)
		if err != nil {
			t.Fatal(err)
		}
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(pemCA)
		a := newApp(t, database, settings, fx.Supply(fx.Annotate(&tls.Config{RootCAs: roots, ServerName: "localhost"}, fx.ResultTags(`name:"mail.tls"`))))
		id, err := a.Mailer.Queue(context.Background(), exportReady())
		if err != nil {
			t.Fatal(err)
		}
		if stats := run(t, a.Queue); stats.Released != 1 {
			t.Fatalf("RunPending = %+v, want the attempt released", stats)
		}
		var lastError string
		if err := a.DB.NewSelect().Table("jobs").Column("last_error").Where("id = ?", id).Scan(context.Background(), &lastError); err != nil {
			t.Fatal(err)
		}
		_, testErr := a.RunCommand("mail:test", "you@example.com")
		if testErr == nil {
			t.Fatal("mail:test succeeded against a server that refuses every login")
		}
		want := "mail: smtp localhost:" + strconv.Itoa(echo.addr.Port) + ": connect: AUTH PLAIN: 535 5.7.8 bad login xxxxx ( crm xxxxx)"
		for what, text := range map[string]string{"jobs.last_error": lastError, "mail:test": testErr.Error()} {
			if text != want {
				t.Errorf("%s = %q, want %q", what, text, want)
			}
		}
		for what, text := range map[string]string{"jobs.last_error": lastError, "the log": a.Logs(), "mail:test": testErr.Error()} {
			for _, secret := range secrets {
				if strings.Contains(text, secret) {
					t.Errorf("%s shows the password (as %q): %s", what, secret, text)
				}
			}
		}
		if !strings.Contains(a.Logs(), "bad login xxxxx") {
			t.Errorf("the worker's log lacks the attempt's error:\n%s", a.Logs())
		}
	})
}
