// Package notifytest fakes the notifier in tests: [Fake] records the
// notifications an app sends instead of delivering them, and its
// assertions check them (Laravel's Notification::fake()).
//
//	fake := notifytest.NewFake()
//	a := apptest.New(t, …, notify.Module(), crm.Module, fake.Replace())
//	// ... exercise the app ...
//	notifytest.AssertSentTo(t, fake, user, func(n InvoicePaid) bool { return n.InvoiceID == "inv-1" })
//
// The fake checks what it is given as Send does (channels, routes, a
// notification that encodes), but takes every notification type,
// registered or not: keep one test that sends through the real notifier.
package notifytest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/navree/navree/notify"
	"github.com/navree/navree/notify/internal/recording"
	"go.uber.org/fx"
)

// Send is a recorded notification to one notifiable.
type Send struct {
	ID           string // the id Send returned for this notifiable
	To           notify.Notifiable
	Notification notify.Notification
	Via          []string // its channels for this notifiable
}

// Fake records sent notifications. It is safe for concurrent use.
type Fake struct {
	n *notify.Notifier

	mu   sync.Mutex
	sent []Send
}

// NewFake returns an empty fake.
func NewFake() *Fake {
	f := &Fake{}
	f.n = notify.NewRecording(recorder{f: f})
	return f
}

type recorder struct {
	recording.Mark
	f *Fake
}

func (r recorder) Record(_ context.Context, to []notify.Notifiable, n notify.Notification, ids []string) {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	for i, who := range to {
		r.f.sent = append(r.f.sent, Send{ID: ids[i], To: who, Notification: n, Via: n.Via(who)})
	}
}

// Replace puts the fake in place of the app's *notify.Notifier:
//
//	apptest.New(t, notify.Module(), crm.Module, fake.Replace())
func (f *Fake) Replace() fx.Option { return fx.Replace(f.n) }

// Notifier returns the fake as a *notify.Notifier, for code built without
// fx.
func (f *Fake) Notifier() *notify.Notifier { return f.n }

// All returns every recorded notification, one per notifiable, in order.
func (f *Fake) All() []Send {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Send(nil), f.sent...)
}

// Clear forgets what was recorded.
func (f *Fake) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = nil
}

// same reports whether the notifiable of s is who: one type and id, and,
// for on-demand routes, the same route over each of its channels.
func same(s Send, who notify.Notifiable) bool {
	if s.To.NotifiableType() != who.NotifiableType() || s.To.NotifiableID() != who.NotifiableID() {
		return false
	}
	for _, c := range s.Via {
		if s.To.NotifiableType() == onDemand && s.To.RouteFor(c) != who.RouteFor(c) {
			return false
		}
	}
	return true
}

// onDemand is the notifiable type of notify.Route.
var onDemand = notify.OnDemand{}.NotifiableType()

// AssertSentTo fails t unless a notification of type N was sent to
// notifiable (the same type and id) for which match returns true (nil
// matches any).
func AssertSentTo[N notify.Notification](t testing.TB, f *Fake, notifiable notify.Notifiable, match func(N) bool) bool {
	t.Helper()
	return assert[N](t, f, "to "+name(notifiable), func(s Send) bool { return same(s, notifiable) }, match)
}

// AssertSentOnDemand fails t unless a notification of type N was sent on
// demand to route over channel (notify.Route) for which match returns
// true (nil matches any).
func AssertSentOnDemand[N notify.Notification](t testing.TB, f *Fake, channel, route string, match func(N) bool) bool {
	t.Helper()
	return assert[N](t, f, "on demand to "+channel+" "+route, func(s Send) bool {
		return s.To.NotifiableType() == onDemand && s.To.RouteFor(channel) == route
	}, match)
}

// Sent returns the recorded notifications of type N, in the order they
// were sent, one per notifiable.
func Sent[N notify.Notification](f *Fake) []N {
	var out []N
	for _, s := range f.All() {
		if n, ok := s.Notification.(N); ok {
			out = append(out, n)
		}
	}
	return out
}

// AssertNothingSent fails t if any notification was sent.
func (f *Fake) AssertNothingSent(t testing.TB) bool {
	t.Helper()
	if len(f.All()) != 0 {
		t.Errorf("notifytest: want no notification sent; %s", f.describe())
		return false
	}
	return true
}

// AssertNotSent fails t if a notification of type N was sent.
func AssertNotSent[N notify.Notification](t testing.TB, f *Fake) bool {
	t.Helper()
	var zero N
	for _, s := range f.All() {
		if _, ok := s.Notification.(N); ok {
			t.Errorf("notifytest: want no %s sent; %s", zero.NotificationType(), f.describe())
			return false
		}
	}
	return true
}

func assert[N notify.Notification](t testing.TB, f *Fake, who string, to func(Send) bool, match func(N) bool) bool {
	t.Helper()
	found := false
	for _, s := range f.All() {
		n, ok := s.Notification.(N)
		if !ok || !to(s) {
			continue
		}
		found = true
		if match == nil || match(n) {
			return true
		}
	}
	var zero N
	what := "no " + zero.NotificationType() + " was sent " + who
	if found {
		what = "no " + zero.NotificationType() + " sent " + who + " matched"
	}
	t.Errorf("notifytest: %s; %s", what, f.describe())
	return false
}

func name(n notify.Notifiable) string {
	return strings.TrimSpace(n.NotifiableType() + " " + n.NotifiableID())
}

// describe lists what was sent, one notification a line.
func (f *Fake) describe() string {
	all := f.All()
	if len(all) == 0 {
		return "nothing was sent"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "sent %d notification(s):", len(all))
	for _, s := range all {
		to := name(s.To)
		if s.To.NotifiableType() == onDemand {
			var routes []string
			for _, c := range s.Via {
				routes = append(routes, c+" "+s.To.RouteFor(c))
			}
			to = strings.Join(routes, ", ") + " (on demand)"
		}
		fmt.Fprintf(&b, "\n\t%s to %s via %s", s.Notification.NotificationType(), to, strings.Join(s.Via, ", "))
	}
	return b.String()
}
