package notifytest_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/navree/navree/mail"
	"github.com/navree/navree/notify"
	"github.com/navree/navree/notify/notifytest"
)

type member struct{ id string }

func (m member) NotifiableType() string { return "member" }
func (m member) NotifiableID() string   { return m.id }
func (m member) RouteFor(channel string) string {
	if channel == notify.Mail {
		return m.id + "@example.com"
	}
	return ""
}

// TrialEnding is never registered: the fake takes it.
type TrialEnding struct {
	Days int `json:"days"`
}

func (TrialEnding) NotificationType() string       { return "billing.trial_ending" }
func (TrialEnding) Via(notify.Notifiable) []string { return []string{notify.Database} }
func (TrialEnding) ToDatabase(notify.Notifiable) (any, error) {
	return map[string]int{"days": 3}, nil
}

// Digest goes by mail only.
type Digest struct{}

func (Digest) NotificationType() string       { return "crm.digest" }
func (Digest) Via(notify.Notifiable) []string { return []string{notify.Mail} }

type recordingT struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *recordingT) Helper() {}
func (r *recordingT) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func TestTheFakeRecordsAndAsserts(t *testing.T) {
	fake := notifytest.NewFake()
	n := fake.Notifier()
	ctx := context.Background()
	ids, err := n.Send(ctx, []notify.Notifiable{member{"ada"}, member{"grace"}}, TrialEnding{Days: 3})
	if err != nil || len(ids) != 2 || ids[0] == ids[1] {
		t.Fatalf("Send = %v, %v", ids, err)
	}
	if err := n.SendNow(ctx, []notify.Notifiable{notify.Route(notify.Log, "ops")}, TrialEnding{Days: 1}); err == nil {
		t.Fatal("the fake sent via database to an on-demand route")
	}
	if _, err := n.Send(ctx, []notify.Notifiable{member{"ada"}}, Digest{}); err == nil ||
		err.Error() != `notify: crm.digest to member ada: it is sent via "mail" and has no ToMail method: notification not sent` {
		t.Fatalf("the fake took what Send refuses: %v", err)
	}
	if !notifytest.AssertSentTo(t, fake, member{"grace"}, func(n TrialEnding) bool { return n.Days == 3 }) ||
		!notifytest.AssertNotSent[Digest](t, fake) {
		t.Fatal("the assertions misjudge what was sent")
	}
	rt := &recordingT{TB: t}
	notifytest.AssertSentTo(rt, fake, member{"linus"}, func(TrialEnding) bool { return true })
	notifytest.AssertSentTo(rt, fake, member{"ada"}, func(n TrialEnding) bool { return n.Days == 7 })
	notifytest.AssertSentOnDemand[TrialEnding](rt, fake, notify.Mail, "ops@example.com", nil)
	notifytest.AssertNotSent[TrialEnding](rt, fake)
	fake.AssertNothingSent(rt)
	sent := "sent 2 notification(s):\n\tbilling.trial_ending to member ada via database\n\tbilling.trial_ending to member grace via database"
	want := []string{
		"notifytest: no billing.trial_ending was sent to member linus; " + sent,
		"notifytest: no billing.trial_ending sent to member ada matched; " + sent,
		"notifytest: no billing.trial_ending was sent on demand to mail ops@example.com; " + sent,
		"notifytest: want no billing.trial_ending sent; " + sent,
		"notifytest: want no notification sent; " + sent,
	}
	if len(rt.errors) != len(want) {
		t.Fatalf("failures %q", rt.errors)
	}
	for i := range want {
		if rt.errors[i] != want[i] {
			t.Errorf("failure %d:\n%s\nwant:\n%s", i, rt.errors[i], want[i])
		}
	}
	if all := fake.All(); len(all) != 2 || all[0].ID != ids[0] {
		t.Fatalf("All = %+v", all)
	}
	if sent := notifytest.Sent[TrialEnding](fake); len(sent) != 2 || sent[0].Days != 3 || len(notifytest.Sent[Digest](fake)) != 0 {
		t.Fatalf("Sent[TrialEnding] = %+v", sent)
	}
	fake.Clear()
	notifytest.AssertNotSent[TrialEnding](t, fake)
	if !fake.AssertNothingSent(t) {
		t.Fatal("AssertNothingSent failed on a cleared fake")
	}
}

// Invite goes by mail, on demand.
type Invite struct {
	Team string `json:"team"`
}

func (Invite) NotificationType() string       { return "crm.invite" }
func (Invite) Via(notify.Notifiable) []string { return []string{notify.Mail} }
func (i Invite) ToMail(_ context.Context, to notify.Notifiable) (mail.Mail, error) {
	return mail.Message{To: []string{to.RouteFor(notify.Mail)}, Subject: "Join " + i.Team, Text: "…"}, nil
}

func TestOnDemandAssertions(t *testing.T) {
	fake := notifytest.NewFake()
	ctx := context.Background()
	if _, err := fake.Notifier().Send(ctx, []notify.Notifiable{notify.Route(notify.Mail, "new@example.com")}, Invite{Team: "sales"}); err != nil {
		t.Fatal(err)
	}
	if !notifytest.AssertSentOnDemand(t, fake, notify.Mail, "new@example.com", func(i Invite) bool { return i.Team == "sales" }) {
		t.Fatal("the on-demand invite is not found")
	}
	rt := &recordingT{TB: t}
	if notifytest.AssertSentOnDemand[Invite](rt, fake, notify.Mail, "old@example.com", nil) {
		t.Fatal("an invite to another address was found")
	}
	if _, err := fake.Notifier().Send(ctx, []notify.Notifiable{notify.Route(notify.Log, "x")}, TrialEnding{}); err == nil ||
		err.Error() != "notify: billing.trial_ending to an on-demand route: the database channel keeps notifications of stored notifiables, not of on-demand routes: notification not sent" {
		t.Fatalf("database to an on-demand route: %v", err)
	}
}
