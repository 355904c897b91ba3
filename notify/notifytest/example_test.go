package notifytest_test

// The examples of the testing section of docs/notifications.md, compiled
// and run.

import (
	"context"
	"fmt"
	"testing"

	"github.com/navree/navree/mail"
	"github.com/navree/navree/notify"
	"github.com/navree/navree/notify/notifytest"
)

// subscriber is a notifiable of the app under test.
type subscriber struct{ id, email string }

func (s subscriber) NotifiableType() string { return "subscriber" }
func (s subscriber) NotifiableID() string   { return s.id }
func (s subscriber) RouteFor(channel string) string {
	if channel == notify.Mail {
		return s.email
	}
	return ""
}

// RenewalDue goes by mail and to the inbox. No module registers it: the
// fake takes it all the same.
type RenewalDue struct {
	Plan string `json:"plan"`
	Days int    `json:"days"`
}

func (RenewalDue) NotificationType() string       { return "billing.renewal_due" }
func (RenewalDue) Via(notify.Notifiable) []string { return []string{notify.Mail, notify.Database} }
func (n RenewalDue) ToMail(ctx context.Context, to notify.Notifiable) (mail.Mail, error) {
	return mail.Message{To: []string{to.RouteFor(notify.Mail)}, Subject: "Your plan renews soon", Text: "…"}, nil
}
func (n RenewalDue) ToDatabase(notify.Notifiable) (any, error) { return n, nil }

// Outage goes to the on-call address, on demand.
type Outage struct {
	Service string `json:"service"`
}

func (Outage) NotificationType() string       { return "ops.outage" }
func (Outage) Via(notify.Notifiable) []string { return []string{notify.Mail} }
func (n Outage) ToMail(ctx context.Context, to notify.Notifiable) (mail.Mail, error) {
	return mail.Message{To: []string{to.RouteFor(notify.Mail)}, Subject: n.Service + " is down", Text: "…"}, nil
}

// Refunded is a notification the app under test should not send.
type Refunded struct{}

func (Refunded) NotificationType() string       { return "billing.refunded" }
func (Refunded) Via(notify.Notifiable) []string { return []string{notify.Log} }

// TextAlert goes by SMS, a channel of the app's own.
type TextAlert struct{}

func (TextAlert) NotificationType() string       { return "ops.text_alert" }
func (TextAlert) Via(notify.Notifiable) []string { return []string{"sms"} }

// printT prints the failures of assertions, as a test would report them;
// a real test passes its *testing.T.
type printT struct{ testing.TB }

func (printT) Helper() {}
func (printT) Errorf(format string, args ...any) {
	fmt.Printf(format+"\n", args...)
}

func Example() {
	fake := notifytest.NewFake()
	notifier := fake.Notifier() // in a test app: fake.Replace()
	ctx := context.Background()
	ada := subscriber{id: "ada", email: "ada@example.com"}
	grace := subscriber{id: "grace", email: "grace@example.com"}

	ids, err := notifier.Send(ctx, []notify.Notifiable{ada, grace}, RenewalDue{Plan: "pro", Days: 7})
	fmt.Println(len(ids), "ids", err)
	notifier.Send(ctx, []notify.Notifiable{notify.Route(notify.Mail, "oncall@example.com")}, Outage{Service: "billing"})
	// The fake checks what Send checks: this one has no mail route.
	_, err = notifier.Send(ctx, []notify.Notifiable{subscriber{id: "linus"}}, RenewalDue{})
	fmt.Println(err)
	// It takes any channel, the app's own too.
	_, err = notifier.Send(ctx, []notify.Notifiable{ada}, TextAlert{})
	fmt.Println(err)

	t := printT{}
	fmt.Println(notifytest.AssertSentTo(t, fake, grace, func(n RenewalDue) bool { return n.Days == 7 }))
	fmt.Println(notifytest.AssertSentOnDemand(t, fake, notify.Mail, "oncall@example.com", func(n Outage) bool { return n.Service == "billing" }))
	fmt.Println(notifytest.AssertNotSent[Refunded](t, fake))
	for _, s := range fake.All() {
		who := s.To.NotifiableType() + " " + s.To.NotifiableID()
		if s.To.NotifiableID() == "" {
			who += s.To.RouteFor(notify.Mail)
		}
		fmt.Println(s.Notification.NotificationType(), "to", who, "via", s.Via, "id given:", s.ID != "")
	}

	// Failing assertions list what was sent.
	notifytest.AssertSentTo[RenewalDue](t, fake, subscriber{id: "linus"}, nil)
	notifytest.AssertSentTo(t, fake, ada, func(n RenewalDue) bool { return n.Plan == "team" })
	notifytest.AssertSentOnDemand[Outage](t, fake, notify.Mail, "ops@example.com", nil)
	notifytest.AssertNotSent[RenewalDue](t, fake)

	fake.Clear()
	notifytest.AssertSentTo[RenewalDue](t, fake, ada, nil)
	// Output:
	// 2 ids <nil>
	// notify: billing.renewal_due to subscriber linus: the notifiable has no mail route (RouteFor("mail") is empty): notification not sent
	// <nil>
	// true
	// true
	// true
	// billing.renewal_due to subscriber ada via [mail database] id given: true
	// billing.renewal_due to subscriber grace via [mail database] id given: true
	// ops.outage to on-demand oncall@example.com via [mail] id given: true
	// ops.text_alert to subscriber ada via [sms] id given: true
	// notifytest: no billing.renewal_due was sent to subscriber linus; sent 4 notification(s):
	// 	billing.renewal_due to subscriber ada via mail, database
	// 	billing.renewal_due to subscriber grace via mail, database
	// 	ops.outage to mail oncall@example.com (on demand) via mail
	// 	ops.text_alert to subscriber ada via sms
	// notifytest: no billing.renewal_due sent to subscriber ada matched; sent 4 notification(s):
	// 	billing.renewal_due to subscriber ada via mail, database
	// 	billing.renewal_due to subscriber grace via mail, database
	// 	ops.outage to mail oncall@example.com (on demand) via mail
	// 	ops.text_alert to subscriber ada via sms
	// notifytest: no ops.outage was sent on demand to mail ops@example.com; sent 4 notification(s):
	// 	billing.renewal_due to subscriber ada via mail, database
	// 	billing.renewal_due to subscriber grace via mail, database
	// 	ops.outage to mail oncall@example.com (on demand) via mail
	// 	ops.text_alert to subscriber ada via sms
	// notifytest: want no billing.renewal_due sent; sent 4 notification(s):
	// 	billing.renewal_due to subscriber ada via mail, database
	// 	billing.renewal_due to subscriber grace via mail, database
	// 	ops.outage to mail oncall@example.com (on demand) via mail
	// 	ops.text_alert to subscriber ada via sms
	// notifytest: no billing.renewal_due was sent to subscriber ada; nothing was sent
}
