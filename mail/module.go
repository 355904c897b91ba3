package mail

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	netmail "net/mail"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/config"
	"github.com/navree/navree/queue"
	"go.uber.org/fx"
)

// The transports.
const (
	// SMTP sends through the SMTP server of [Config.Host].
	SMTP = "smtp"
	// Log sends nothing: it logs one line per message (its recipient
	// count, subject, size and Message-ID; in development only, see
	// [Params].Development, its recipients' addresses and text body too).
	Log = "log"
	// Memory keeps messages in the process for tests: see [Mailer.Memory]
	// and package mailtest.
	Memory = "memory"
)

// The TLS modes of [Config.TLS].
const (
	// STARTTLS connects in plain text and upgrades with STARTTLS, refusing
	// a server that does not offer it (submission, port 587).
	STARTTLS = "starttls"
	// TLS connects over TLS from the start (implicit TLS, port 465).
	TLS = "tls"
	// NoTLS never encrypts: for a mail catcher on the loopback interface.
	NoTLS = "none"
)

// Config is the [mail] section of the configuration.
type Config struct {
	// Transport is what sends mail: "smtp", "log" (the default, so a fresh
	// app sends nothing by accident) or "memory".
	Transport string `koanf:"transport" validate:"oneof=smtp log memory"`
	// Host is the SMTP server's host name or IP address alone, such as
	// "smtp.example.com"; needed by the smtp transport. A URL or a
	// user:password@ in it fails the boot: the user goes in Username, the
	// password in Password and the port in Port.
	Host string `koanf:"host"`
	// Port is the SMTP server's port; 0 (the default) for 465 with tls =
	// "tls" and 587 otherwise.
	Port int `koanf:"port" validate:"min=0,max=65535"`
	// Username and Password log in to the SMTP server; no login when
	// Username is empty. The password is never printed.
	Username string        `koanf:"username"`
	Password config.Secret `koanf:"password"`
	// TLS is "starttls" (the default), "tls" or "none".
	TLS string `koanf:"tls" validate:"oneof=starttls tls none"`
	// From is the sender of messages that name none, such as
	// "CRM <noreply@crm.example.com>"; needed by the smtp transport (the
	// log and memory ones use noreply@localhost without it). Its domain
	// names each Message-ID.
	From string `koanf:"from"`
	// Timeout bounds connecting to the SMTP server and each command of a
	// send (the wait for its reply, and each 32 KiB of the message
	// written); default 15s.
	Timeout time.Duration `koanf:"timeout"`
	// SendTimeout bounds a whole send through the SMTP server, from
	// connecting to the server's acceptance of the message; default 1m. A
	// queued send is also bounded by its job's timeout.
	SendTimeout time.Duration `koanf:"send_timeout"`
	// Helo is the name the client gives in EHLO (or HELO): a fully
	// qualified domain name, such as "crm.example.com", or an address
	// literal, such as "[192.0.2.10]"; empty (the default) for the domain
	// of From.
	Helo string `koanf:"helo"`
	// TLSCAFile is a PEM file of the certificate authorities that sign the
	// SMTP server's certificate, for a server whose certificate a private
	// CA signed; empty (the default) for the system's roots.
	TLSCAFile string `koanf:"tls_ca_file"`
	// TLSServerName is the name the server's certificate must hold; empty
	// (the default) for Host.
	TLSServerName string `koanf:"tls_server_name"`
	// Queue is the queue mail.send jobs go to, such as "mail"; empty (the
	// default) for the queue's default queue.
	Queue string `koanf:"queue"`
	// Failover lists transports tried in order when the one before fails
	// to connect or refuses a message for now (a 4xx reply), such as
	// ["log"]; default none. A permanent refusal (5xx) is about the
	// message, not the transport: it tries no other.
	Failover []string `koanf:"failover" validate:"oneof=smtp log memory"`
}

// DefaultConfig returns the defaults of the [mail] section.
func DefaultConfig() Config {
	return Config{Transport: Log, TLS: STARTTLS, Timeout: 15 * time.Second, SendTimeout: time.Minute}
}

// hostAllowed is what mail.host accepts.
const hostAllowed = `the SMTP server's host name or IP address alone, such as "smtp.example.com": ` +
	`the user goes in mail.username, the password in mail.password (APP_MAIL__PASSWORD), the port in mail.port and the TLS mode in mail.tls`

// Validate checks what the validate tags cannot: a From that parses, a
// host and sender for smtp, a host name alone in Host, a HELO name,
// positive timeouts, a CA file that holds certificates and a failover
// list that repeats no transport.
func (c Config) Validate() error {
	if c.Host != "" && !isHostName(c.Host) && net.ParseIP(c.Host) == nil {
		return config.Invalid("mail.host", withoutUserInfo(c.Host), hostAllowed)
	}
	if c.Helo != "" && !isHelo(c.Helo) {
		return config.Invalid("mail.helo", c.Helo, `a fully qualified domain name, such as "crm.example.com", or an address literal, such as "[192.0.2.10]"; empty for the domain of mail.from`)
	}
	if c.TLSServerName != "" && !isHostName(c.TLSServerName) && net.ParseIP(c.TLSServerName) == nil {
		return config.Invalid("mail.tls_server_name", c.TLSServerName, `a host name the server's certificate holds, such as "smtp.internal"; empty for mail.host`)
	}
	if c.TLS == NoTLS && (c.TLSCAFile != "" || c.TLSServerName != "") {
		return config.Invalid("mail.tls", c.TLS, "starttls or tls with mail.tls_ca_file or mail.tls_server_name, which only a TLS connection uses")
	}
	if c.TLSCAFile != "" {
		if _, err := loadCAs(c.TLSCAFile); err != nil {
			return config.Invalid("mail.tls_ca_file", c.TLSCAFile, "a PEM file of the certificate authority that signed the SMTP server's certificate ("+err.Error()+")")
		}
	}
	if c.From != "" {
		if _, err := netmail.ParseAddress(c.From); err != nil {
			return config.Invalid("mail.from", c.From, `an address such as "CRM <noreply@crm.example.com>"`)
		}
	}
	if c.Queue != "" && queue.CheckQueueName(c.Queue) != nil {
		return config.Invalid("mail.queue", c.Queue, "empty for the default queue, or a queue name of 1 to 100 ASCII letters, digits, '-', '_', '.' or ':'")
	}
	if c.Username != "" && c.TLS == NoTLS && slices.Contains(c.chain(), SMTP) {
		return config.Invalid("mail.tls", c.TLS, `starttls or tls with a username: a login over tls = "none" would send the password in plain text`)
	}
	if c.Timeout <= 0 {
		return config.Invalid("mail.timeout", c.Timeout, "a duration above zero, such as 15s")
	}
	if c.SendTimeout <= 0 {
		return config.Invalid("mail.send_timeout", c.SendTimeout, "a duration above zero, such as 1m")
	}
	chain := c.chain()
	for i, name := range chain {
		if slices.Index(chain, name) != i {
			return config.Invalid("mail.failover", strings.Join(c.Failover, ","),
				"transports tried after mail.transport ("+c.Transport+"), each once")
		}
	}
	if slices.Contains(chain, SMTP) {
		switch {
		case c.Host == "":
			return config.Invalid("mail.host", c.Host, "the SMTP server's host name, which the smtp transport needs")
		case c.From == "":
			return config.Invalid("mail.from", c.From, `the sender of messages that name none, such as "CRM <noreply@crm.example.com>", which the smtp transport needs`)
		case c.Helo == "" && !isHelo(c.helo()):
			return config.Invalid("mail.helo", c.Helo, `a fully qualified domain name, such as "crm.example.com", which the smtp transport needs when the domain of mail.from is not one`)
		}
	}
	return nil
}

// helo is the name the smtp transport says EHLO with: Helo, or the
// domain of From.
func (c Config) helo() string {
	if c.Helo != "" {
		return c.Helo
	}
	a, err := netmail.ParseAddress(c.From)
	if err != nil {
		return ""
	}
	_, domain, _ := strings.Cut(a.Address, "@")
	return domain
}

// withoutUserInfo is host, an invalid [mail] host, as an error may show
// it: any user and password masked.
func withoutUserInfo(host string) string {
	at := strings.LastIndexByte(host, '@')
	if at < 0 {
		return host
	}
	scheme := ""
	if i := strings.Index(host[:at], "://"); i >= 0 {
		scheme = host[:i+3]
	}
	return scheme + "xxxxx" + host[at:]
}

// isHostName reports whether s is a host name: dot-separated labels of
// ASCII letters, digits and '-' (and '_', which some internal names
// hold), none starting or ending with '-'.
func isHostName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(strings.TrimSuffix(s, "."), ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := range len(label) {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// isHelo reports whether s can follow EHLO (RFC 5321 4.1.1.1): a domain,
// or an address literal such as [192.0.2.10] or [IPv6:2001:db8::1].
func isHelo(s string) bool {
	if lit, ok := strings.CutPrefix(s, "["); ok {
		lit, ok = strings.CutSuffix(lit, "]")
		if v6, isV6 := strings.CutPrefix(lit, "IPv6:"); isV6 {
			ip := net.ParseIP(v6)
			return ok && ip != nil && ip.To4() == nil
		}
		ip := net.ParseIP(lit)
		return ok && ip != nil && ip.To4() != nil && !strings.Contains(lit, ":")
	}
	return isHostName(s) && !strings.Contains(s, "_")
}

// loadCAs reads the certificates of the PEM file path.
func loadCAs(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("it holds no PEM certificate")
	}
	return pool, nil
}

// chain is the transport and its failovers, in the order tried.
func (c Config) chain() []string { return append([]string{c.Transport}, c.Failover...) }

// withDefaults fills the zero fields of a Config written in code and
// checks it.
func (c Config) withDefaults() (Config, error) {
	def := DefaultConfig()
	if c.Transport == "" {
		c.Transport = def.Transport
	}
	if c.TLS == "" {
		c.TLS = def.TLS
	}
	if c.Timeout == 0 {
		c.Timeout = def.Timeout
	}
	if c.SendTimeout == 0 {
		c.SendTimeout = def.SendTimeout
	}
	for _, name := range c.chain() {
		if name != SMTP && name != Log && name != Memory {
			return c, fmt.Errorf("mail: unknown transport %q; want smtp, log or memory", name)
		}
	}
	if c.TLS != STARTTLS && c.TLS != TLS && c.TLS != NoTLS {
		return c, fmt.Errorf("mail: unknown tls mode %q; want starttls, tls or none", c.TLS)
	}
	return c, c.Validate()
}

// Params are what [New] builds a Mailer from.
type Params struct {
	Config Config
	// Dispatcher is the queue [Mailer.Queue] pushes mail.send jobs to.
	Dispatcher queue.Dispatcher
	Clock      app.Clock    // dates messages; the system clock when nil
	Logger     *slog.Logger // nil logs nothing
	// Templates hold the template mail ([Templates]).
	Templates []fs.FS
	// Previews are the previews mail:preview and serve show ([Previews]).
	Previews []Preview
	// TLSConfig, when set, is the TLS configuration of the smtp transport
	// (a test server's certificate authority, say); in an fx app, supply
	// it named "mail.tls". [Config.TLSCAFile] and [Config.TLSServerName],
	// when set, apply over it.
	TLSConfig *tls.Config
	// Development makes the log transport log each message's recipients
	// and its text body (up to 4 KiB), not only their count; default
	// false. [Module] sets it in development: no APP_ENV, or
	// APP_ENV=development, and never in an app without config.Module.
	Development bool
}

// senderIn is what the sender needs: not the queue, which needs the
// sender (its mail.send handler does).
type senderIn struct {
	fx.In
	Config    Config
	AppConfig *config.Config `optional:"true"` // its environment says whether this is development
	Clock     app.Clock      `optional:"true"`
	Logger    *slog.Logger   `optional:"true"`
	Templates []fs.FS        `group:"mail.templates"`
	TLSConfig *tls.Config    `name:"mail.tls" optional:"true"`
}

type mailerIn struct {
	fx.In
	Dispatcher queue.Dispatcher
	Previews   []Preview `group:"mail.previews"`
}

// Module is mail, configured by the [mail] section. It provides the app's
// [*Mailer], registers the mail.send job that sends queued mail and adds
// the commands mail:test and mail:preview, and, in development (no
// APP_ENV, or APP_ENV=development), the previews to serve under
// /mail/previews.
func Module() fx.Option { return module(config.Section("mail", DefaultConfig())) }

// ModuleWith is [Module] configured in code instead: zero fields of cfg
// take their defaults.
//
//	mail.ModuleWith(mail.Config{Transport: mail.Memory})
func ModuleWith(cfg Config) fx.Option { return module(fx.Supply(fx.Private, cfg)) }

func module(cfg fx.Option) fx.Option {
	return fx.Module("mail",
		cfg,
		fx.Provide(fx.Private, func(p senderIn) (*sender, error) { return newSender(p, development(p.AppConfig)) }),
		fx.Provide(func(s *sender, p mailerIn) (*Mailer, error) { return newMailer(s, p.Dispatcher, p.Previews) }),
		queue.Register[SendJob](func(s *sender) queue.Handler[SendJob] { return sendHandler{s} }),
		fx.Provide(fx.Annotate(previewRoutes, fx.ResultTags(`group:"app.routes,flatten"`))),
		app.Commands(commands()...),
	)
}

// development reports whether the app runs in development: its config
// names no environment, or "development". Without a config it is unknown,
// and taken as not.
func development(c *config.Config) bool {
	return c != nil && (c.Env() == "" || c.Env() == "development")
}

// Templates adds the template mail of fsys, such as an embed.FS holding
// mail/export-ready.html.tmpl and mail/export-ready.txt.tmpl: see
// [Template].
func Templates(fsys fs.FS) fx.Option {
	return fx.Supply(fx.Annotate(fsys, fx.As(new(fs.FS)), fx.ResultTags(`group:"mail.templates"`)))
}
