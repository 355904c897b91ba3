package mail

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	netmail "net/mail"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/queue"
)

// Mailer sends email: at once with [Mailer.Send], or queued as a mail.send
// job with [Mailer.Queue]. It is safe for concurrent use.
type Mailer struct {
	s          *sender
	dispatcher queue.Dispatcher
	previews   map[string]Preview
}

// sender is what sends a message, now or in a worker: the part of a
// Mailer the mail.send job needs (it cannot need the Mailer, which needs
// the queue the job is registered with).
type sender struct {
	cfg       Config
	from      *netmail.Address // [mail] from
	chain     chain
	memory    *MemoryTransport // in chain, or nil
	templates *templates
	clock     app.Clock
	logger    *slog.Logger
}

// New returns the Mailer p describes, its templates parsed: a template
// that does not parse is an error naming its file.
//
// Built without fx, an app registers the job that sends queued mail with
// the queue itself: [Mailer.Handler].
func New(p Params) (*Mailer, error) {
	s, err := newSender(senderIn{Config: p.Config, Clock: p.Clock, Logger: p.Logger, Templates: p.Templates, TLSConfig: p.TLSConfig}, p.Development)
	if err != nil {
		return nil, err
	}
	return newMailer(s, p.Dispatcher, p.Previews)
}

func newMailer(s *sender, d queue.Dispatcher, previews []Preview) (*Mailer, error) {
	m := &Mailer{s: s, dispatcher: d, previews: map[string]Preview{}}
	for _, pv := range previews {
		if _, dup := m.previews[pv.Name]; dup {
			return nil, fmt.Errorf("mail: preview %q is registered twice", pv.Name)
		}
		if pv.Name == "" || pv.Func == nil {
			return nil, fmt.Errorf("mail: a preview needs a name and a func")
		}
		m.previews[pv.Name] = pv
	}
	return m, nil
}

func newSender(p senderIn, development bool) (*sender, error) {
	cfg, err := p.Config.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &sender{cfg: cfg, clock: p.Clock, logger: p.Logger}
	if s.clock == nil {
		s.clock = app.SystemClock{}
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	s.logger = s.logger.With("logger", "navree.mail")
	s.from = &netmail.Address{Address: "noreply@localhost"} // log and memory only: Validate makes smtp need a from
	if cfg.From != "" {
		if s.from, err = netmail.ParseAddress(cfg.From); err != nil {
			return nil, fmt.Errorf("mail: from: %w", err)
		}
	}
	for _, name := range cfg.chain() {
		switch name {
		case SMTP:
			tc, err := cfg.tlsConfig(p.TLSConfig)
			if err != nil {
				return nil, err
			}
			s.chain = append(s.chain, newSMTP(cfg, tc))
		case Log:
			s.chain = append(s.chain, logTransport{s.logger, development})
		case Memory:
			s.memory = &MemoryTransport{}
			s.chain = append(s.chain, s.memory)
		}
	}
	if s.templates, err = parseTemplates(p.Templates); err != nil {
		return nil, err
	}
	return s, nil
}

// Memory returns the mailer's memory transport ([mail] transport or
// failover "memory"); nil when it has none. Package mailtest asserts over
// it.
func (m *Mailer) Memory() *MemoryTransport { return m.s.memory }

// render resolves msg into a Message and renders it.
func (s *sender) render(msg Mail) (Message, *rendered, error) {
	if msg == nil {
		return Message{}, nil, invalid("the mail is nil")
	}
	m, err := msg.message(s.templates)
	if err != nil {
		return Message{}, nil, err
	}
	r, err := render(m, s.from, s.clock.Now())
	return m, r, err
}

// deliver sends r through the first transport that takes it, and returns
// that transport.
func (s *sender) deliver(ctx context.Context, r *rendered) (transport, error) {
	t, err := s.chain.send(ctx, r.Envelope, r.Raw)
	if err == nil && t != s.chain[0] {
		s.logger.WarnContext(ctx, "mail sent through a failover transport", "transport", t.String(),
			"failed", s.chain[0].String(), "message_id", r.MessageID)
	}
	return t, err
}

// Send renders msg and sends it now, through the configured transport
// (and its failovers). A server's refusal is a [*SendError].
func (m *Mailer) Send(ctx context.Context, msg Mail) error {
	_, err := m.send(ctx, msg)
	return err
}

// send is Send, also returning the transport that took the message and
// its Message-ID.
func (m *Mailer) send(ctx context.Context, msg Mail) (sentThrough, error) {
	_, r, err := m.s.render(msg)
	if err != nil {
		return sentThrough{}, err
	}
	t, err := m.s.deliver(ctx, r)
	if err != nil {
		return sentThrough{}, err
	}
	return sentThrough{t, r.MessageID}, nil
}

type sentThrough struct {
	transport transport
	messageID string
}

// Queue renders msg now, so a template error fails the call and not a
// worker, and queues a mail.send job that sends it. Like any dispatch it
// joins the unit of work in ctx: when the unit rolls back (a request that
// fails, say), no mail is sent. It returns the job's id.
//
// The queued message, attachments included, must fit in the queue's
// payload limit ([queue.MaxPayloadBytes], with room for its encoding):
// store a large file and mail a link to it.
func (m *Mailer) Queue(ctx context.Context, msg Mail) (string, error) { return m.Later(ctx, msg, 0) }

// Later is [Mailer.Queue] with the send delayed by delay.
func (m *Mailer) Later(ctx context.Context, msg Mail, delay time.Duration) (string, error) {
	if m.dispatcher == nil {
		return "", errors.New("mail: this Mailer has no queue: build it with Params.Dispatcher to queue mail")
	}
	_, r, err := m.s.render(msg)
	if err != nil {
		return "", err
	}
	env, err := m.envelope(r)
	if err != nil {
		return "", err
	}
	env.Delay = delay
	id, err := m.dispatcher.Push(ctx, env)
	if errors.Is(err, queue.ErrPayloadTooLarge) { // the queue's check, said of the mail
		return "", fmt.Errorf("mail: the message %q is %d bytes once queued, over the queue's limit of %d: store large files elsewhere and mail a link to them, or Send it now: %w",
			r.Subject, len(env.Payload), queue.MaxPayloadBytes, queue.ErrPayloadTooLarge)
	}
	return id, err
}

// envelope is the mail.send job of r. Its JSON keeps <, > and & as they
// are (json.Marshal would write each as six bytes), so an HTML body costs
// its size in the queue, not three times it.
func (m *Mailer) envelope(r *rendered) (queue.Envelope, error) {
	var payload bytes.Buffer
	enc := json.NewEncoder(&payload)
	enc.SetEscapeHTML(false)
	job := newSendJob(r)
	if err := enc.Encode(job); err != nil {
		return queue.Envelope{}, fmt.Errorf("mail: encode the mail.send payload: %w", err)
	}
	o := job.JobOptions()
	o.Queue = m.s.cfg.Queue
	return queue.Envelope{Name: job.JobName(), Payload: bytes.TrimSuffix(payload.Bytes(), []byte("\n")), Options: o}, nil
}

// SendJob is the payload of the mail.send job: a rendered message, sent
// as it was when it was queued.
type SendJob struct {
	V         int      `json:"v"` // the payload's version: 1
	From      string   `json:"from"`
	To        []string `json:"to"`
	Subject   string   `json:"subject"`
	MessageID string   `json:"message_id"`
	Raw       string   `json:"raw"` // the message's RFC 5322 bytes
}

// JobName returns "mail.send".
func (SendJob) JobName() string { return "mail.send" }

// JobOptions gives mail five attempts: a server that refuses for now
// (greylisting, a full mailbox) is retried after 1, 2, 4 and 8 minutes.
// The queue is [Config.Queue].
func (SendJob) JobOptions() queue.Options {
	return queue.Options{MaxAttempts: 5, Backoff: queue.Exponential(time.Minute, 30*time.Minute)}
}

func newSendJob(r *rendered) SendJob {
	return SendJob{V: 1, From: r.From, To: r.To, Subject: r.Subject, MessageID: r.MessageID, Raw: string(r.Raw)}
}

// sendHandler runs mail.send jobs.
type sendHandler struct{ s *sender }

// Handle sends the job's message. A permanent refusal fails the job at
// once, with the server's reply; any other error is retried.
func (h sendHandler) Handle(ctx context.Context, j SendJob, jc queue.JobContext) error {
	if j.V != 1 {
		return queue.Permanent(fmt.Errorf("mail: mail.send payload version %d is not one this build sends (1)", j.V))
	}
	r := &rendered{Envelope{From: j.From, To: j.To, Subject: j.Subject, MessageID: j.MessageID}, []byte(j.Raw)}
	if _, err := h.s.deliver(ctx, r); err != nil {
		if IsPermanent(err) {
			return queue.Permanent(err)
		}
		return err
	}
	return nil
}

// Jobs returns the registration of the mail.send job, which sends queued
// mail, for an app built without fx to give the queue:
//
//	err = q.Handle(mailer.Jobs()...)
//
// With [Module], the module registers it.
func (m *Mailer) Jobs() []queue.Registration {
	return []queue.Registration{queue.HandlerOf[SendJob](sendHandler{m.s})}
}
