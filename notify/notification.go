package notify

import (
	"context"

	"github.com/navree/navree/mail"
	"github.com/navree/navree/queue"
)

// The channels every app has.
const (
	// Mail sends the notification's ToMail message to the notifiable's
	// mail route, through the app's *mail.Mailer.
	Mail = "mail"
	// Database stores the notification's ToDatabase data in the table
	// notifications, for an inbox ([Inbox]).
	Database = "database"
	// Log writes the notification's ToLog line to the app's log.
	Log = "log"
)

// Notifiable is who a notification is for: a user, a team. Its type and
// id name it in the database channel; its routes say where each channel
// reaches it.
type Notifiable interface {
	NotifiableType() string // such as "user"
	NotifiableID() string   // such as "42"
	// RouteFor returns where channel reaches the notifiable, such as its
	// email address for "mail"; "" when it has none.
	RouteFor(channel string) string
}

// Notification is something to tell a notifiable, such as a paid
// invoice: a JSON-encodable value (ids and facts) with a stable type,
// which chooses its channels per notifiable and renders for each through
// the optional methods [MailNotification], [DatabaseNotification] and
// [LogNotification].
//
//	type InvoicePaid struct {
//		InvoiceID string `json:"invoice_id"`
//		Amount    string `json:"amount"`
//	}
//
//	func (InvoicePaid) NotificationType() string           { return "invoice.paid" }
//	func (InvoicePaid) Via(notify.Notifiable) []string     { return []string{notify.Mail, notify.Database} }
type Notification interface {
	NotificationType() string
	Via(n Notifiable) []string
}

// MailNotification renders a notification for the mail channel: the
// message to send, usually to n.RouteFor(notify.Mail).
type MailNotification interface {
	ToMail(ctx context.Context, n Notifiable) (mail.Mail, error)
}

// DatabaseNotification renders a notification for the database channel:
// the JSON-encodable data the inbox keeps.
type DatabaseNotification interface {
	ToDatabase(n Notifiable) (any, error)
}

// LogNotification renders a notification for the log channel: one line.
type LogNotification interface {
	ToLog(n Notifiable) string
}

// Decliner is a notification that may decline a delivery when its job
// runs: ShouldSend returning false skips the channel for n (an invoice
// already paid again, a notification already read).
type Decliner interface {
	ShouldSend(ctx context.Context, n Notifiable, channel string) bool
}

// WithOptions is a notification whose deliveries have job options of
// their own, per channel: a queue, attempts, a backoff, a timeout.
type WithOptions interface {
	DeliveryOptions(channel string) queue.Options
}

// Route is a notifiable with no stored identity, for notifications sent
// on demand to an address: notify.Route(notify.Mail, "ops@example.com").
// More routes can be added with [OnDemand.And].
func Route(channel, route string) OnDemand {
	return OnDemand{routes: map[string]string{channel: route}}
}

// OnDemand is a notifiable made of routes alone ([Route]). The database
// channel does not reach it.
type OnDemand struct{ routes map[string]string }

// And returns o with one more route.
func (o OnDemand) And(channel, route string) OnDemand {
	routes := map[string]string{channel: route}
	for k, v := range o.routes {
		if k != channel {
			routes[k] = v
		}
	}
	return OnDemand{routes: routes}
}

// NotifiableType returns "on-demand".
func (OnDemand) NotifiableType() string { return onDemandType }

// NotifiableID returns "".
func (OnDemand) NotifiableID() string { return "" }

// RouteFor returns the route of channel.
func (o OnDemand) RouteFor(channel string) string { return o.routes[channel] }

const onDemandType = "on-demand"
