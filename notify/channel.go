package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"

	"github.com/navree/navree/app"
	"github.com/navree/navree/db"
	"github.com/navree/navree/mail"
	"github.com/navree/navree/queue"
	"go.uber.org/fx"
)

// Channel delivers notifications of one kind: an app registers its own
// (SMS, chat) with [AddChannel]. Deliver runs in the delivery's job; its
// error fails the attempt (queue.Permanent to fail the job at once).
type Channel interface {
	Deliver(ctx context.Context, d Delivery) error
}

// Delivery is one notification to one notifiable over one channel.
type Delivery struct {
	ID           string // the notification's id, shared by its channels
	Channel      string
	Notifiable   Notifiable // a Recipient: type, id and this channel's route
	Notification Notification
	Attempt      int // 1 for the first
}

// namedChannel is a channel an app registered.
type namedChannel struct {
	name    string
	where   string
	channel Channel
}

// AddChannel registers the channel name, built by constructor: a
// func(deps...) returning a [Channel] (and, optionally, an error), whose
// parameters fx provides.
//
//	notify.AddChannel("sms", func(c *twilio.Client) notify.Channel { return smsChannel{c} })
func AddChannel(name string, constructor any) fx.Option {
	where := app.Caller(1).String()
	build, err := app.Adapt(constructor, reflect.TypeFor[Channel](), func(c reflect.Value) namedChannel {
		return namedChannel{name: name, where: where, channel: c.Interface().(Channel)}
	})
	if err != nil {
		return fx.Error(fmt.Errorf("notify.AddChannel(%q) at %s: %w", name, where, err))
	}
	return fx.Provide(fx.Annotate(build, fx.ResultTags(`group:"notify.channels"`)))
}

// registeredType is a notification type an app registered.
type registeredType struct {
	name  string
	typ   reflect.Type
	where string
}

// Register registers the notification type N, so that a worker can decode
// its deliveries: every notification an app sends must be registered.
func Register[N Notification]() fx.Option {
	var zero N
	return fx.Supply(fx.Annotated{Group: "notify.types", Target: registeredType{name: zero.NotificationType(), typ: reflect.TypeFor[N](), where: app.Caller(1).String()}})
}

// deliverer delivers notifications: the part of a Notifier the notify.send
// job needs (it cannot need the Notifier, which needs the queue the job
// is registered with).
type deliverer struct {
	anyType  bool // a recording notifier's: every type is taken
	types    map[string]reflect.Type
	where    map[string]string // type name -> where it was registered
	channels map[string]Channel
	logger   *slog.Logger
}

type delivererIn struct {
	fx.In
	Mailer   *mail.Mailer     `optional:"true"`
	DB       *db.DB           `optional:"true"`
	Clock    app.Clock        `optional:"true"`
	Logger   *slog.Logger     `optional:"true"`
	Types    []registeredType `group:"notify.types"`
	Channels []namedChannel   `group:"notify.channels"`
}

func newDeliverer(p delivererIn) (*deliverer, error) {
	d := &deliverer{types: map[string]reflect.Type{}, channels: map[string]Channel{}, logger: p.Logger}
	if d.logger == nil {
		d.logger = slog.New(slog.DiscardHandler)
	}
	if p.Clock == nil {
		p.Clock = app.SystemClock{}
	}
	d.where = map[string]string{}
	for _, t := range p.Types {
		if prev, dup := d.types[t.name]; dup && prev != t.typ {
			return nil, fmt.Errorf("notify: notification type %q is the name of two Go types: %s at %s and %s at %s", t.name, prev, d.where[t.name], t.typ, t.where)
		}
		d.types[t.name], d.where[t.name] = t.typ, t.where
	}
	d.channels[Log] = logChannel{d.logger.With("logger", "navree.notify")}
	if p.Mailer != nil {
		d.channels[Mail] = mailChannel{p.Mailer}
	}
	if p.DB != nil {
		d.channels[Database] = databaseChannel{p.DB, p.Clock}
	}
	for _, c := range p.Channels {
		if c.name == Log || c.name == Mail || c.name == Database {
			return nil, fmt.Errorf("notify: channel %q at %s: the name is notify's own channel's", c.name, c.where)
		}
		if _, dup := d.channels[c.name]; dup {
			return nil, fmt.Errorf("notify: channel %q is registered twice (one at %s)", c.name, c.where)
		}
		d.channels[c.name] = c.channel
	}
	return d, nil
}

// check says whether channel can take n to who, when it is sent.
func (d *deliverer) check(channel string, who Notifiable, n Notification) error {
	if _, ok := d.channels[channel]; !ok && !d.anyType {
		switch channel {
		case Mail:
			return errors.New(`it is sent via "mail", and the app has no mail.Module()`)
		case Database:
			return errors.New(`it is sent via "database", and the app has no db.Module()`)
		}
		return fmt.Errorf("it is sent via %q, a channel no module registered (notify.AddChannel)", channel)
	}
	switch channel {
	case Mail:
		if _, ok := n.(MailNotification); !ok {
			return errors.New(`it is sent via "mail" and has no ToMail method`)
		}
		if who.RouteFor(Mail) == "" {
			return errors.New(`the notifiable has no mail route (RouteFor("mail") is empty)`)
		}
	case Database:
		if _, ok := n.(DatabaseNotification); !ok {
			return errors.New(`it is sent via "database" and has no ToDatabase method`)
		}
		if who.NotifiableType() == onDemandType {
			return errors.New(`the database channel keeps notifications of stored notifiables, not of on-demand routes`)
		}
		if who.NotifiableType() == "" || who.NotifiableID() == "" {
			return errors.New(`the database channel needs the notifiable's type and id (NotifiableType and NotifiableID are empty)`)
		}
	}
	return nil
}

// deliver decodes j's notification and delivers it over its channel, if
// the notification does not decline.
func (d *deliverer) deliver(ctx context.Context, j SendJob, n Notification, attempt int) error {
	channel, ok := d.channels[j.Channel]
	if !ok {
		return queue.Permanent(fmt.Errorf("notify: %s %s: no channel %q in this binary", j.Type, j.ID, j.Channel))
	}
	if dec, ok := n.(Decliner); ok && !dec.ShouldSend(ctx, j.Notifiable, j.Channel) {
		return nil
	}
	err := channel.Deliver(ctx, Delivery{ID: j.ID, Channel: j.Channel, Notifiable: j.Notifiable, Notification: n, Attempt: attempt})
	if err != nil {
		return fmt.Errorf("notify: deliver %s %s via %s: %w", j.Type, j.ID, j.Channel, err)
	}
	return nil
}

// decode is the notification of j, in its registered Go type.
func (d *deliverer) decode(j SendJob) (Notification, error) {
	typ, ok := d.types[j.Type]
	if !ok {
		return nil, fmt.Errorf("notify: notification type %q is not registered in this binary (notify.Register)", j.Type)
	}
	ptr := reflect.New(typ)
	if err := json.Unmarshal(j.Notification, ptr.Interface()); err != nil {
		return nil, fmt.Errorf("notify: the notification %s %s does not decode into %s: %w", j.Type, j.ID, typ, err)
	}
	n, ok := ptr.Elem().Interface().(Notification)
	if !ok {
		return nil, fmt.Errorf("notify: %s is not a notify.Notification", typ)
	}
	return n, nil
}

// sendHandler runs notify.send jobs.
type sendHandler struct{ d *deliverer }

// Handle delivers the job's notification; what cannot decode fails at
// once.
func (h sendHandler) Handle(ctx context.Context, j SendJob, jc queue.JobContext) error {
	if j.V != 1 {
		return queue.Permanent(fmt.Errorf("notify: notify.send payload version %d is not one this build sends (1)", j.V))
	}
	n, err := h.d.decode(j)
	if err != nil {
		return queue.Permanent(err)
	}
	return h.d.deliver(ctx, j, n, jc.Attempt)
}

// mailChannel sends ToMail's message through the app's mailer, in the
// delivery's job: a permanent refusal fails the job at once.
type mailChannel struct{ m *mail.Mailer }

func (c mailChannel) Deliver(ctx context.Context, d Delivery) error {
	msg, err := d.Notification.(MailNotification).ToMail(ctx, d.Notifiable)
	if err != nil {
		return err
	}
	if err = c.m.Send(ctx, msg); mail.IsPermanent(err) {
		return queue.Permanent(err)
	}
	return err
}

// databaseChannel stores ToDatabase's data, once per notification id.
type databaseChannel struct {
	db    *db.DB
	clock app.Clock
}

func (c databaseChannel) Deliver(ctx context.Context, d Delivery) error {
	data, err := d.Notification.(DatabaseNotification).ToDatabase(d.Notifiable)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return queue.Permanent(fmt.Errorf("the database data does not encode to JSON: %w", err))
	}
	return insertStored(ctx, c.db, Stored{ID: d.ID, Type: d.Notification.NotificationType(), NotifiableType: d.Notifiable.NotifiableType(),
		NotifiableID: d.Notifiable.NotifiableID(), Data: raw, CreatedAt: c.clock.Now()})
}

// logChannel writes one line per notification.
type logChannel struct{ logger *slog.Logger }

func (c logChannel) Deliver(ctx context.Context, d Delivery) error {
	line := d.Notification.NotificationType()
	if l, ok := d.Notification.(LogNotification); ok {
		line = l.ToLog(d.Notifiable)
	}
	c.logger.InfoContext(ctx, line, "notification", d.Notification.NotificationType(), "id", d.ID,
		"notifiable", describe(d.Notifiable))
	return nil
}
