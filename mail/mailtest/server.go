package mailtest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Server is a real SMTP server on 127.0.0.1 for tests, which records the
// messages it accepts. A test points the code under test at Host and Port,
// sends, and reads what arrived with Received. Options make the server
// offer STARTTLS or require AUTH, and Refuse makes it turn messages away.
//
// A message is recorded before the server answers its DATA, so a client
// that was told its message was accepted finds it in Received at once.
//
// A Server is safe for concurrent use.
type Server struct {
	t         testing.TB
	cfg       serverConfig
	addr      *net.TCPAddr
	clientTLS *tls.Config

	mu          sync.Mutex
	closed      bool
	conns       []net.Conn
	connections int
	received    []received
	refusals    int // messages still to refuse, or < 0 for all of them
	refusal     *smtp.SMTPError
}

// ServerOption configures a Server made by NewServer.
type ServerOption func(*serverConfig)

type serverConfig struct {
	startTLS           bool
	implicitTLS        bool
	auth               bool
	username, password string
}

// received is a message as a session recorded it.
type received struct {
	envelope Envelope
	raw      []byte
}

// WithSTARTTLS makes the server offer STARTTLS, with a self-signed
// certificate for 127.0.0.1 made for the server alone. A client trusts it
// through ClientTLSConfig.
func WithSTARTTLS() ServerOption {
	return func(c *serverConfig) { c.startTLS = true }
}

// WithTLS makes the server speak TLS from the first byte (implicit TLS,
// as on port 465), with a certificate as WithSTARTTLS makes; it offers no
// STARTTLS. A client trusts it through ClientTLSConfig.
func WithTLS() ServerOption {
	return func(c *serverConfig) { c.implicitTLS = true }
}

// WithAuth makes the server require AUTH with username and password, by
// the PLAIN or the LOGIN mechanism, before it takes a message. Other
// credentials are refused with "535 5.7.8" and a MAIL command before AUTH
// with "530 5.7.0". The server allows AUTH without TLS.
func WithAuth(username, password string) ServerOption {
	return func(c *serverConfig) {
		c.auth = true
		c.username, c.password = username, password
	}
}

// NewServer starts a Server listening on a free port of 127.0.0.1. It fails
// the test if it cannot listen. The server is closed, along with any
// connection still open, when the test and its subtests finish.
func NewServer(t testing.TB, opts ...ServerOption) *Server {
	t.Helper()
	s := &Server{t: t}
	for _, opt := range opts {
		opt(&s.cfg)
	}

	srv := smtp.NewServer(backend{s})
	srv.Domain = "localhost"
	srv.AllowInsecureAuth = true
	srv.ReadTimeout = 10 * time.Second
	srv.WriteTimeout = 10 * time.Second
	srv.MaxMessageBytes = 32 << 20
	srv.MaxRecipients = 100
	srv.ErrorLog = log.New(io.Discard, "", 0)
	var serverTLS *tls.Config
	if s.cfg.startTLS || s.cfg.implicitTLS {
		cert, err := selfSigned()
		if err != nil {
			t.Fatalf("mailtest: a certificate for TLS: %v", err)
		}
		serverTLS = &tls.Config{Certificates: []tls.Certificate{cert}}
		roots := x509.NewCertPool()
		roots.AddCert(cert.Leaf)
		s.clientTLS = &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"}
	}
	if s.cfg.startTLS {
		srv.TLSConfig = serverTLS
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("mailtest: listen: %v", err)
	}
	s.addr = ln.Addr().(*net.TCPAddr)
	var accept net.Listener = ln
	if s.cfg.implicitTLS {
		accept = tls.NewListener(ln, serverTLS)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(listener{accept, s}) }()

	t.Cleanup(func() {
		// Stop accepting and end every connection, wait for Serve to
		// return, and only then wait for the connections' goroutines,
		// which Shutdown does, so that none outlives the test.
		s.mu.Lock()
		s.closed = true
		conns := s.conns
		s.mu.Unlock()
		ln.Close()
		for _, c := range conns {
			c.Close()
		}
		if err := <-served; err != nil && !errors.Is(err, net.ErrClosed) {
			t.Errorf("mailtest: serving: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, net.ErrClosed) {
			t.Errorf("mailtest: shutting down: %v", err)
		}
	})
	return s
}

// Host returns the address the server listens on, "127.0.0.1".
func (s *Server) Host() string { return s.addr.IP.String() }

// Port returns the port the server listens on.
func (s *Server) Port() int { return s.addr.Port }

// Addr returns the server's host and port, as in "127.0.0.1:2525".
func (s *Server) Addr() string { return s.addr.String() }

// ClientTLSConfig returns a TLS configuration for a client of the server:
// it trusts the server's certificate and names 127.0.0.1. Each call returns
// a new one. It returns nil for a server made without WithSTARTTLS or
// WithTLS.
func (s *Server) ClientTLSConfig() *tls.Config { return s.clientTLS.Clone() }

// Refuse makes the server answer the RCPT TO command of the next n messages
// with reply, such as "550 5.1.1 no such user" or "451 4.3.0 try again
// later": a code from 400 to 599, an optional enhanced status code of the
// same class, and a text. Without an enhanced code the server sends X.0.0.
//
// Each refused message counts once, however many recipients it names: the
// server refuses all of them, with the same reply. A negative n refuses
// every message from now on, and n == 0 stops refusing, whatever reply
// says. Each call replaces the refusals of the one before.
//
// Refuse panics if n is not 0 and reply is malformed.
func (s *Server) Refuse(n int, reply string) {
	var refusal *smtp.SMTPError
	if n != 0 {
		refusal = parseReply(reply)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refusals, s.refusal = n, refusal
}

// Received returns every message the server accepted so far, in the order
// it accepted them, decoded by Parse with their Envelope filled. It fails
// the test for a message that does not parse, which it leaves out.
func (s *Server) Received() []Message {
	s.t.Helper()
	s.mu.Lock()
	all := slices.Clone(s.received)
	s.mu.Unlock()

	msgs := make([]Message, 0, len(all))
	for i, r := range all {
		m, err := Parse(bytes.Clone(r.raw))
		if err != nil {
			s.t.Errorf("mailtest: message %d received, from %q: %v", i+1, r.envelope.From, err)
			continue
		}
		m.Envelope = Envelope{From: r.envelope.From, To: slices.Clone(r.envelope.To)}
		msgs = append(msgs, m)
	}
	return msgs
}

// Connections returns how many connections the server has accepted so far.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connections
}

// nextRefusal returns the reply to refuse a new message with, or nil to
// take it.
func (s *Server) nextRefusal() *smtp.SMTPError {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refusals == 0 {
		return nil
	}
	if s.refusals > 0 {
		s.refusals--
	}
	return s.refusal
}

func (s *Server) record(r received) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.received = append(s.received, r)
}

// listener counts the connections it accepts and keeps them, for the
// cleanup to close.
type listener struct {
	net.Listener
	s *Server
}

func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	l.s.connections++
	if l.s.closed {
		c.Close()
	} else {
		l.s.conns = append(l.s.conns, c)
	}
	return c, nil
}

type backend struct{ s *Server }

func (b backend) NewSession(*smtp.Conn) (smtp.Session, error) {
	return &session{s: b.s}, nil
}

// session is one SMTP connection's state, from its EHLO on.
type session struct {
	s      *Server
	authed bool

	// The message under way.
	from    string
	to      []string
	decided bool            // whether the message's first RCPT came
	refusal *smtp.SMTPError // the reply to all its RCPTs, if refused
}

var errAuthRequired = &smtp.SMTPError{
	Code:         530,
	EnhancedCode: smtp.EnhancedCode{5, 7, 0},
	Message:      "Authentication required",
}

func (ss *session) AuthMechanisms() []string {
	if !ss.s.cfg.auth {
		return nil
	}
	return []string{sasl.Plain, sasl.Login}
}

func (ss *session) Auth(mech string) (sasl.Server, error) {
	if !ss.s.cfg.auth {
		return nil, smtp.ErrAuthUnsupported
	}
	switch mech {
	case sasl.Plain:
		return sasl.NewPlainServer(func(identity, username, password string) error {
			if identity != "" && identity != username {
				return smtp.ErrAuthFailed
			}
			return ss.login(username, password)
		}), nil
	case sasl.Login:
		return &loginServer{check: ss.login}, nil
	}
	return nil, smtp.ErrAuthUnknownMechanism
}

func (ss *session) login(username, password string) error {
	if username != ss.s.cfg.username || password != ss.s.cfg.password {
		return smtp.ErrAuthFailed
	}
	ss.authed = true
	return nil
}

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	if ss.s.cfg.auth && !ss.authed {
		return errAuthRequired
	}
	ss.Reset()
	ss.from = from
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if !ss.decided {
		ss.decided = true
		ss.refusal = ss.s.nextRefusal()
	}
	if ss.refusal != nil {
		return ss.refusal
	}
	ss.to = append(ss.to, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	ss.s.record(received{envelope: Envelope{From: ss.from, To: ss.to}, raw: raw})
	ss.Reset()
	return nil
}

func (ss *session) Reset() {
	ss.from, ss.to, ss.decided, ss.refusal = "", nil, false, nil
}

func (ss *session) Logout() error { return nil }

// loginServer is the server side of the LOGIN mechanism, which go-sasl
// implements for clients only: it asks for the username, unless the client
// sent it with AUTH, then for the password.
type loginServer struct {
	check    func(username, password string) error
	username string
	asked    int // 0 before any challenge, 1 after "Username:", 2 after "Password:"
}

func (l *loginServer) Next(response []byte) (challenge []byte, done bool, err error) {
	switch {
	case l.asked == 0 && response == nil:
		l.asked = 1
		return []byte("Username:"), false, nil
	case l.asked < 2:
		l.username, l.asked = string(response), 2
		return []byte("Password:"), false, nil
	}
	return nil, true, l.check(l.username, string(response))
}

// parseReply parses a reply given to Refuse, panicking if it is malformed.
func parseReply(reply string) *smtp.SMTPError {
	bad := func(why string) {
		panic(fmt.Sprintf("mailtest: Refuse: malformed reply %q: %s", reply, why))
	}
	if strings.ContainsAny(reply, "\r\n") {
		bad("it holds a line break")
	}
	code, rest, _ := strings.Cut(reply, " ")
	n, err := strconv.Atoi(code)
	if len(code) != 3 || err != nil || n < 400 || n > 599 {
		bad("it does not start with a code from 400 to 599")
	}
	e := &smtp.SMTPError{Code: n, EnhancedCode: smtp.EnhancedCodeNotSet}
	word, text, _ := strings.Cut(rest, " ")
	if strings.Trim(word, "0123456789.") == "" && strings.Contains(word, ".") {
		enhanced, ok := parseEnhancedCode(word)
		if !ok {
			bad("its enhanced status code is not class.subject.detail")
		}
		if enhanced[0] != n/100 {
			bad("its enhanced status code is not of the class of its code")
		}
		e.EnhancedCode, rest = enhanced, text
	}
	if e.Message = strings.TrimSpace(rest); e.Message == "" {
		bad("it has no text")
	}
	return e
}

// parseEnhancedCode parses an RFC 3463 status code such as "5.1.1".
func parseEnhancedCode(s string) (smtp.EnhancedCode, bool) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 || len(parts[0]) != 1 {
		return smtp.EnhancedCode{}, false
	}
	var code smtp.EnhancedCode
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || len(p) == 0 || len(p) > 3 {
			return smtp.EnhancedCode{}, false
		}
		code[i] = n
	}
	return code, true
}

// selfSigned makes a certificate for 127.0.0.1 and localhost, signed by
// its own key, valid from an hour ago for a week.
func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	now := time.Now()
	template := &x509.Certificate{
		Subject:               pkix.Name{Organization: []string{"mailtest"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}
