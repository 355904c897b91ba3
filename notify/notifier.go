package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"log/slog"

	"github.com/gofrs/uuid/v5"
	"github.com/navree/navree/notify/internal/recording"
	"github.com/navree/navree/queue"
)

// ErrNotSent matches the error of a notification Send or SendNow refuses
// before delivering anything: an unregistered type, a channel no one
// has, a notifiable without the route a channel needs.
var ErrNotSent = errors.New("notification not sent")

// Notifier sends notifications. It is safe for concurrent use.
type Notifier struct {
	d          *deliverer
	dispatcher queue.Dispatcher
	recorder   Recorder // a recording notifier (notifytest) records instead
}

// maxPerSend bounds the deliveries of one Send, so that its jobs fit in
// one batch the queue stores at once.
const maxPerSend = 100_000

// Send queues the deliveries of n: one notify.send job per notifiable and
// channel (n.Via), each retried alone, so a failing mail never rewrites
// the database row nor delays another recipient. It returns the
// notification's id for each notifiable, in order: the id the database
// channel stores it under, shared by its channels. The jobs are queued
// together, all or none, and join the unit of work in ctx.
func (s *Notifier) Send(ctx context.Context, to []Notifiable, n Notification) ([]string, error) {
	deliveries, ids, err := s.plan(to, n)
	if err != nil {
		return nil, err
	}
	if s.recorder != nil {
		s.recorder.Record(ctx, to, n, ids)
		return ids, nil
	}
	if s.dispatcher == nil {
		return nil, errors.New("notify: this Notifier has no queue: build it with Params.Dispatcher to queue notifications (SendNow needs none)")
	}
	envelopes, err := envelopesOf(deliveries, n)
	if err != nil {
		return nil, err
	}
	if len(envelopes) > 0 {
		if _, err := s.dispatcher.PushMany(ctx, envelopes...); err != nil {
			return nil, fmt.Errorf("notify: queue %s: %w", n.NotificationType(), err)
		}
	}
	return ids, nil
}

// Envelopes returns the notify.send jobs of n, one per notifiable and
// channel, and the notification's ids, without queueing them: to run the
// deliveries as the steps of a flow, such as a batch whose finally runs
// once every delivery has ended:
//
//	envs, ids, err := notifier.Envelopes(owners, DealWon{DealID: "d1"})
//	id, err := q.DispatchFlow(ctx, queue.Batch(queue.JobsOf(envs...)...).Finally(AuditDeal{DealID: "d1"}))
func (s *Notifier) Envelopes(to []Notifiable, n Notification) ([]queue.Envelope, []string, error) {
	deliveries, ids, err := s.plan(to, n)
	if err != nil {
		return nil, nil, err
	}
	envelopes, err := envelopesOf(deliveries, n)
	return envelopes, ids, err
}

// envelopesOf are the jobs of deliveries of n.
func envelopesOf(deliveries []delivery, n Notification) ([]queue.Envelope, error) {
	envelopes := make([]queue.Envelope, 0, len(deliveries))
	for _, d := range deliveries {
		payload, err := json.Marshal(d.job)
		if err != nil {
			return nil, fmt.Errorf("notify: %s: %w", n.NotificationType(), err)
		}
		envelopes = append(envelopes, queue.Envelope{Name: SendJob{}.JobName(), Payload: payload, Options: d.options})
	}
	return envelopes, nil
}

// SendNow delivers n to each notifiable over each channel in the caller,
// one after the other; every delivery is tried, and their errors come back
// joined.
func (s *Notifier) SendNow(ctx context.Context, to []Notifiable, n Notification) error {
	deliveries, ids, err := s.plan(to, n)
	if err != nil {
		return err
	}
	if s.recorder != nil {
		s.recorder.Record(ctx, to, n, ids)
		return nil
	}
	var errs []error
	for _, d := range deliveries {
		if err := s.d.deliver(ctx, d.job, n, 1); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// delivery is one notify.send job to be.
type delivery struct {
	job     SendJob
	options queue.Options
}

// plan checks n and its notifiables and makes their deliveries, encoding
// n once, and the notification's id for each notifiable. A notifiable
// without channels gets an id and no delivery.
func (s *Notifier) plan(to []Notifiable, n Notification) ([]delivery, []string, error) {
	if n == nil {
		return nil, nil, fmt.Errorf("notify: a nil notification: %w", ErrNotSent)
	}
	typ := n.NotificationType()
	registered, ok := s.d.types[typ]
	switch {
	case s.d.anyType:
	case !ok:
		return nil, nil, fmt.Errorf("notify: %s is not registered: add notify.Register[%s]() to a module: %w", typ, reflect.TypeOf(n), ErrNotSent)
	case registered != reflect.TypeOf(n):
		return nil, nil, fmt.Errorf("notify: %s is registered as %s, not %s: %w", typ, registered, reflect.TypeOf(n), ErrNotSent)
	}
	data, err := json.Marshal(n)
	if err != nil {
		return nil, nil, fmt.Errorf("notify: %s does not encode to JSON: %w: %w", typ, err, ErrNotSent)
	}
	var out []delivery
	ids := make([]string, len(to))
	for i, who := range to {
		if who == nil {
			return nil, nil, fmt.Errorf("notify: %s: notifiable %d of %d is nil: %w", typ, i+1, len(to), ErrNotSent)
		}
		id, err := uuid.NewV7()
		if err != nil {
			return nil, nil, fmt.Errorf("notify: an id: %w", err)
		}
		ids[i] = id.String()
		var via []string // n.Via without repeats
		for _, c := range n.Via(who) {
			if !slices.Contains(via, c) {
				via = append(via, c)
			}
		}
		for _, channel := range via {
			if err := s.d.check(channel, who, n); err != nil {
				return nil, nil, fmt.Errorf("notify: %s to %s: %w: %w", typ, describe(who), err, ErrNotSent)
			}
			o := SendJob{}.JobOptions()
			if wo, ok := n.(WithOptions); ok {
				o = o.Override(wo.DeliveryOptions(channel))
			}
			job := SendJob{V: 1, ID: id.String(), Type: typ, Channel: channel, Notification: data,
				Notifiable: Recipient{Type: who.NotifiableType(), ID: who.NotifiableID()}}
			if route := who.RouteFor(channel); route != "" {
				job.Notifiable.Routes = map[string]string{channel: route}
			}
			out = append(out, delivery{job: job, options: o})
		}
		if len(out) > maxPerSend {
			return nil, nil, fmt.Errorf("notify: %s: over %d deliveries in one Send: send to fewer notifiables at a time: %w", typ, maxPerSend, ErrNotSent)
		}
	}
	return out, ids, nil
}

// describe names a notifiable in errors: "user 42", or "an on-demand
// route".
func describe(n Notifiable) string {
	if n.NotifiableType() == onDemandType {
		return "an on-demand route"
	}
	return strings.TrimSpace(n.NotifiableType() + " " + n.NotifiableID())
}

// Recipient is a notifiable as a delivery knows it: its type, its id and
// its route for the delivery's channel, as they were when it was sent.
// ToMail, ToDatabase, ToLog and ShouldSend get one in a notify.send job.
type Recipient struct {
	Type   string            `json:"type"`
	ID     string            `json:"id"`
	Routes map[string]string `json:"routes,omitempty"`
}

// NotifiableType returns r.Type.
func (r Recipient) NotifiableType() string { return r.Type }

// NotifiableID returns r.ID.
func (r Recipient) NotifiableID() string { return r.ID }

// RouteFor returns r's route for channel.
func (r Recipient) RouteFor(channel string) string { return r.Routes[channel] }

// SendJob is the payload of the notify.send job: one delivery.
type SendJob struct {
	V            int             `json:"v"`  // the payload's version: 1
	ID           string          `json:"id"` // the notification's id, shared by its channels
	Type         string          `json:"type"`
	Channel      string          `json:"channel"`
	Notifiable   Recipient       `json:"notifiable"`
	Notification json.RawMessage `json:"notification"` // the notification, as JSON
}

// JobName returns "notify.send".
func (SendJob) JobName() string { return "notify.send" }

// JobOptions gives each delivery five attempts, retried after 1, 2, 4 and
// 8 minutes, unless the notification's DeliveryOptions say otherwise.
func (SendJob) JobOptions() queue.Options {
	return queue.Options{MaxAttempts: 5, Backoff: queue.Exponential(time.Minute, 30*time.Minute)}
}

// Recorder receives what a recording Notifier ([NewRecording]) is asked to
// send. Only notifytest.Fake can be one: a Recorder embeds a mark that
// only the notify packages can name.
type Recorder interface {
	recording.Marked
	// Record takes a notification, its notifiables and their ids.
	Record(ctx context.Context, to []Notifiable, n Notification, ids []string)
}

// NewRecording returns a notifier that checks what it is given as Send
// does, and records it with r instead of delivering it: notifytest.Fake's.
// It takes every notification type, registered or not, and the channels
// mail, database and log.
func NewRecording(r Recorder) *Notifier {
	d := &deliverer{types: map[string]reflect.Type{}, channels: map[string]Channel{Mail: nil, Database: nil, Log: nil}, logger: slog.New(slog.DiscardHandler), anyType: true}
	return &Notifier{d: d, recorder: r}
}

// Jobs returns the registration of the notify.send job, which delivers
// what Send queues, for an app built without fx to give the queue:
//
//	err = q.Handle(notifier.Jobs()...)
//
// With [Module], the module registers it.
func (s *Notifier) Jobs() []queue.Registration {
	return []queue.Registration{queue.HandlerOf[SendJob](sendHandler{s.d})}
}
