package mail

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wneessen/go-mail/smtp"
)

// What the smtp transport reads of a server's reply. RFC 5321 allows reply
// lines of 512 octets; a line longer than maxReplyLine, or a reply of more
// than maxReplyLines lines, ends the attempt, so that a broken or hostile
// server costs a worker a few kilobytes, not its memory.
const (
	maxReplyLine  = 4096
	maxReplyLines = 100
)

// dataChunk is how much of a message is written under one mail.timeout:
// a large message is bounded by the server's progress, not by its size.
const dataChunk = 32 << 10

// smtpTransport sends through an SMTP server, connecting afresh for each
// message: no connection outlives the send that opened it.
type smtpTransport struct {
	cfg  Config
	tls  *tls.Config // ServerName set
	addr string
	helo string
}

func newSMTP(cfg Config, tlsConfig *tls.Config) *smtpTransport {
	if cfg.Port == 0 {
		cfg.Port = 587
		if cfg.TLS == TLS {
			cfg.Port = 465
		}
	}
	if tlsConfig == nil {
		tlsConfig = &tls.Config{}
	}
	if tlsConfig.ServerName == "" {
		tlsConfig.ServerName = cfg.Host
	}
	return &smtpTransport{cfg: cfg, tls: tlsConfig, addr: net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)), helo: cfg.helo()}
}

// tlsConfig is the TLS configuration of the smtp transport: base (the
// Params' or the one named mail.tls), with the CAs of TLSCAFile and the
// server name TLSServerName when they are set.
func (c Config) tlsConfig(base *tls.Config) (*tls.Config, error) {
	tc := &tls.Config{}
	if base != nil {
		tc = base.Clone()
	}
	if c.TLSCAFile != "" {
		pool, err := loadCAs(c.TLSCAFile)
		if err != nil {
			return nil, fmt.Errorf("mail: tls_ca_file %s: %w", c.TLSCAFile, err)
		}
		tc.RootCAs = pool
	}
	if c.TLSServerName != "" {
		tc.ServerName = c.TLSServerName
	}
	return tc, nil
}

func (t *smtpTransport) String() string { return "smtp " + t.addr }

// Send dials, says hello, upgrades to TLS and logs in as configured, sends
// the message and quits. Each command waits mail.timeout for its reply,
// the whole send mail.send_timeout; cancelling ctx closes the connection.
func (t *smtpTransport) Send(ctx context.Context, env Envelope, raw []byte) error {
	ctx, cancel := context.WithTimeoutCause(ctx, t.cfg.SendTimeout,
		fmt.Errorf("the send took over mail.send_timeout (%s): %w", t.cfg.SendTimeout, context.DeadlineExceeded))
	defer cancel()
	c, err := t.connect(ctx)
	if err != nil {
		return t.failed(ctx, "connect", err)
	}
	defer c.close()
	from := "MAIL FROM:<" + env.From + ">"
	if _, ok := c.ext["SMTPUTF8"]; ok && !isASCII(env.From, env.To...) {
		from += " SMTPUTF8"
	}
	if _, err := c.expect(ctx, 2, from); err != nil {
		return t.failed(ctx, "MAIL FROM", err)
	}
	for _, to := range env.To {
		if _, err := c.expect(ctx, 2, "RCPT TO:<"+to+">"); err != nil {
			return t.failed(ctx, "RCPT TO", err)
		}
	}
	if _, err := c.expect(ctx, 3, "DATA"); err != nil {
		return t.failed(ctx, "DATA", err)
	}
	if err := c.data(ctx, raw); err != nil {
		return t.failed(ctx, "DATA", err)
	}
	_, _ = c.cmd(ctx, "QUIT") // the message is accepted; a failed goodbye changes nothing
	return nil
}

// connect dials, reads the greeting, says EHLO, upgrades to TLS and logs
// in, as configured.
func (t *smtpTransport) connect(ctx context.Context) (*smtpConn, error) {
	dialCtx, cancel := context.WithTimeout(ctx, t.cfg.Timeout)
	defer cancel()
	var conn net.Conn
	var err error
	if t.cfg.TLS == TLS {
		conn, err = (&tls.Dialer{Config: t.tls}).DialContext(dialCtx, "tcp", t.addr)
	} else {
		conn, err = (&net.Dialer{}).DialContext(dialCtx, "tcp", t.addr)
	}
	if err != nil {
		return nil, tlsHint(err)
	}
	c := &smtpConn{raw: conn, timeout: t.cfg.Timeout, stop: context.AfterFunc(ctx, func() { conn.Close() })}
	c.use(conn)
	if err := t.hello(ctx, c); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

func (t *smtpTransport) hello(ctx context.Context, c *smtpConn) error {
	c.extend(ctx)
	if r, err := c.reply(ctx); err != nil {
		return fmt.Errorf("greeting: %w", err)
	} else if r.code != 220 {
		return fmt.Errorf("greeting: %w", &replyError{r.code, r.text()})
	}
	if err := c.ehlo(ctx, t.helo); err != nil {
		return err
	}
	if t.cfg.TLS == STARTTLS {
		if _, ok := c.ext["STARTTLS"]; !ok {
			return errors.New(`STARTTLS: the server does not offer it, and mail.tls = "starttls" requires it`)
		}
		if _, err := c.expect(ctx, 2, "STARTTLS"); err != nil {
			return fmt.Errorf("STARTTLS: %w", err)
		}
		tc := tls.Client(c.conn, t.tls)
		c.extend(ctx)
		if err := tc.HandshakeContext(ctx); err != nil {
			return fmt.Errorf("STARTTLS: %w", tlsHint(c.ioErr(ctx, err)))
		}
		c.use(tc)
		if err := c.ehlo(ctx, t.helo); err != nil {
			return err
		}
	}
	if t.cfg.Username == "" {
		return nil
	}
	a, err := t.auth(c)
	if err != nil {
		return fmt.Errorf("AUTH: %w", err)
	}
	return c.auth(ctx, a, &smtp.ServerInfo{Name: t.tls.ServerName, TLS: c.tls != nil, Auth: strings.Fields(c.ext["AUTH"])})
}

// mechanisms are the AUTH mechanisms the transport speaks, the one it
// prefers first.
var mechanisms = []string{"SCRAM-SHA-256-PLUS", "SCRAM-SHA-256", "SCRAM-SHA-1-PLUS", "SCRAM-SHA-1", "NTLM", "CRAM-MD5", "PLAIN", "LOGIN"}

// auth is the login of the first of mechanisms the server offers.
func (t *smtpTransport) auth(c *smtpConn) (smtp.Auth, error) {
	offered, ok := c.ext["AUTH"]
	if !ok {
		return nil, errors.New("the server offers no login (no AUTH in its EHLO reply), and mail.username is set")
	}
	user, pw, host := t.cfg.Username, t.cfg.Password.Reveal(), t.tls.ServerName
	for _, mech := range mechanisms {
		if !slices.Contains(strings.Fields(strings.ToUpper(offered)), mech) {
			continue
		}
		switch mech {
		case "SCRAM-SHA-256-PLUS":
			return smtp.ScramSHA256PlusAuth(user, pw, c.tls), nil
		case "SCRAM-SHA-256":
			return smtp.ScramSHA256Auth(user, pw), nil
		case "SCRAM-SHA-1-PLUS":
			return smtp.ScramSHA1PlusAuth(user, pw, c.tls), nil
		case "SCRAM-SHA-1":
			return smtp.ScramSHA1Auth(user, pw), nil
		case "NTLM":
			return smtp.NTLMAuth(user, pw, ""), nil
		case "CRAM-MD5":
			return smtp.CRAMMD5Auth(user, pw), nil
		case "PLAIN":
			return smtp.PlainAuth("", user, pw, host, false), nil
		case "LOGIN":
			return smtp.LoginAuth(user, pw, host, false), nil
		}
	}
	return nil, fmt.Errorf("the server offers %s, none of which this client speaks (%s)", offered, strings.Join(mechanisms, " "))
}

// failed is the error of step, a command or "connect": a [*SendError]
// for a 4xx or 5xx reply to MAIL FROM, RCPT TO or DATA, else one naming
// the transport and the step, or ctx's cause when ctx ended the send.
// Every secret is masked.
func (t *smtpTransport) failed(ctx context.Context, step string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("mail: %s: %s: %w", t, step, context.Cause(ctx))
	}
	var reply *replyError
	if step != "connect" && errors.As(err, &reply) && reply.code >= 400 && reply.code < 600 {
		return &SendError{Transport: t.String(), Command: step, Code: reply.code, Reply: t.mask(reply.text), Permanent: reply.code >= 500}
	}
	if text := t.mask(err.Error()); text != err.Error() {
		err = errors.New(text)
	}
	return fmt.Errorf("mail: %s: %s: %w", t, step, err)
}

// mask replaces in s the password, and the forms a login sends it in,
// should a server echo it.
func (t *smtpTransport) mask(s string) string {
	pw := t.cfg.Password.Reveal()
	if pw == "" {
		return s
	}
	b64 := base64.StdEncoding.EncodeToString
	for _, secret := range []string{b64([]byte("\x00" + t.cfg.Username + "\x00" + pw)), b64([]byte(pw)), pw} {
		s = strings.ReplaceAll(s, secret, "xxxxx")
	}
	return s
}

// tlsHint adds to a certificate error the key that fixes it.
func tlsHint(err error) error {
	var unknown x509.UnknownAuthorityError
	var name x509.HostnameError
	switch {
	case errors.As(err, &unknown):
		return fmt.Errorf("%w; if a private CA signed the server's certificate, set mail.tls_ca_file to that CA's PEM file", err)
	case errors.As(err, &name):
		return fmt.Errorf("%w; set mail.tls_server_name to a name the certificate holds", err)
	}
	return err
}

// replyError is a reply of a class the command did not expect.
type replyError struct {
	code int
	text string
}

func (e *replyError) Error() string { return strconv.Itoa(e.code) + " " + e.text }

// reply is a server's reply: its code and the text of each line.
type reply struct {
	code  int
	lines []string
}

// text is the reply's text, its lines joined by spaces.
func (r reply) text() string { return strings.Join(r.lines, " ") }

// smtpConn is the client side of one SMTP session.
type smtpConn struct {
	raw     net.Conn // as dialled, closed when ctx ends
	conn    net.Conn // raw, or the TLS connection over it
	r       *bufio.Reader
	tls     *tls.ConnectionState // nil before TLS
	ext     map[string]string    // the EHLO keywords, upper case, and their parameters
	timeout time.Duration        // mail.timeout
	byCtx   bool                 // whether the deadline set last is ctx's, not mail.timeout
	stop    func() bool
}

// use reads and writes conn from now on.
func (c *smtpConn) use(conn net.Conn) {
	c.conn, c.r = conn, bufio.NewReaderSize(conn, maxReplyLine)
	if tc, ok := conn.(*tls.Conn); ok {
		state := tc.ConnectionState()
		c.tls = &state
	}
}

func (c *smtpConn) close() {
	c.stop()
	c.conn.Close()
}

// extend gives the next exchange mail.timeout, or what is left of ctx
// when that is less.
func (c *smtpConn) extend(ctx context.Context) {
	deadline := time.Now().Add(c.timeout)
	d, ok := ctx.Deadline()
	c.byCtx = ok && d.Before(deadline)
	if c.byCtx {
		deadline = d
	}
	_ = c.conn.SetDeadline(deadline)
}

// cmd sends line and reads the reply, within mail.timeout.
func (c *smtpConn) cmd(ctx context.Context, line string) (reply, error) {
	if strings.ContainsAny(line, "\r\n") {
		return reply{}, errors.New("the command holds a line break")
	}
	c.extend(ctx)
	if _, err := io.WriteString(c.conn, line+"\r\n"); err != nil {
		return reply{}, c.ioErr(ctx, err)
	}
	return c.reply(ctx)
}

// expect is cmd, with a reply of another class than class a *replyError.
func (c *smtpConn) expect(ctx context.Context, class int, line string) (reply, error) {
	r, err := c.cmd(ctx, line)
	if err == nil && r.code/100 != class {
		err = &replyError{r.code, r.text()}
	}
	return r, err
}

// reply reads a reply, of at most maxReplyLines lines of at most
// maxReplyLine octets.
func (c *smtpConn) reply(ctx context.Context) (reply, error) {
	var r reply
	for n := 1; ; n++ {
		b, err := c.r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return r, fmt.Errorf("the server's reply has a line over %d octets (RFC 5321 allows 512)", maxReplyLine)
		}
		if err != nil {
			return r, c.ioErr(ctx, err)
		}
		line := strings.ToValidUTF8(strings.TrimRight(string(b), "\r\n"), "\uFFFD")
		code, err := strconv.Atoi(line[:min(3, len(line))])
		if len(line) < 3 || err != nil || code < 100 || code > 599 || len(line) > 3 && line[3] != ' ' && line[3] != '-' || n > 1 && code != r.code {
			return r, fmt.Errorf("the server's reply %q is not SMTP", line[:min(len(line), 80)])
		}
		r.code = code
		if len(line) > 4 {
			r.lines = append(r.lines, line[4:])
		}
		if len(line) == 3 || line[3] == ' ' {
			return r, nil
		}
		if n == maxReplyLines {
			return r, fmt.Errorf("the server's reply has over %d lines", maxReplyLines)
		}
	}
}

// ioErr is err, an error reading or writing, as the transport reports it.
func (c *smtpConn) ioErr(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded) && c.byCtx:
		<-ctx.Done() // its deadline has passed: it ends now
		return context.Cause(ctx)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("the server did not respond within mail.timeout (%s): %w", c.timeout, os.ErrDeadlineExceeded)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("the server closed the connection: %w", io.ErrUnexpectedEOF)
	}
	return err
}

// ehlo says EHLO as name and keeps the extensions the reply lists.
func (c *smtpConn) ehlo(ctx context.Context, name string) error {
	r, err := c.expect(ctx, 2, "EHLO "+name)
	if err != nil {
		return fmt.Errorf("EHLO %s: %w", name, err)
	}
	c.ext = map[string]string{}
	for i, line := range r.lines {
		if i > 0 { // the first line names the server
			keyword, params, _ := strings.Cut(line, " ")
			c.ext[strings.ToUpper(keyword)] = params
		}
	}
	return nil
}

// data writes the message, dot-stuffed, and reads the server's verdict.
func (c *smtpConn) data(ctx context.Context, raw []byte) error {
	dw := textproto.NewWriter(bufio.NewWriter(c.conn)).DotWriter()
	for len(raw) > 0 {
		n := min(len(raw), dataChunk)
		c.extend(ctx)
		if _, err := dw.Write(raw[:n]); err != nil {
			return c.ioErr(ctx, err)
		}
		raw = raw[n:]
	}
	c.extend(ctx)
	if err := dw.Close(); err != nil {
		return c.ioErr(ctx, err)
	}
	r, err := c.reply(ctx)
	if err == nil && r.code/100 != 2 {
		err = &replyError{r.code, r.text()}
	}
	return err
}

// auth logs in with a.
func (c *smtpConn) auth(ctx context.Context, a smtp.Auth, server *smtp.ServerInfo) error {
	mech, resp, err := a.Start(server)
	if err != nil {
		return fmt.Errorf("AUTH: %w", err)
	}
	b64 := base64.StdEncoding
	line := "AUTH " + mech
	if len(resp) > 0 {
		line += " " + b64.EncodeToString(resp)
	}
	r, err := c.cmd(ctx, line)
	for err == nil {
		switch r.code {
		case 235:
			_, err = a.Next([]byte(r.text()), false)
			if err == nil {
				return nil
			}
		case 334:
			var challenge []byte
			if challenge, err = b64.DecodeString(r.text()); err == nil {
				resp, err = a.Next(challenge, true)
			}
			if err == nil {
				r, err = c.cmd(ctx, b64.EncodeToString(resp))
				continue
			}
			_, _ = c.cmd(ctx, "*") // abort the exchange
		default:
			err = &replyError{r.code, r.text()}
		}
	}
	return fmt.Errorf("AUTH %s: %w", mech, err)
}

// isASCII reports whether every address is ASCII: if one is not, MAIL FROM
// asks for SMTPUTF8.
func isASCII(from string, to ...string) bool {
	for _, a := range append([]string{from}, to...) {
		for i := range len(a) {
			if a[i] >= 0x80 {
				return false
			}
		}
	}
	return true
}
