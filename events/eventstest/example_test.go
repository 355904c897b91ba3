package eventstest_test

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/navree/navree/events/eventstest"
)

// UserSignedUp and PlanChanged are events of the app under test.
type UserSignedUp struct {
	UserID string  `json:"user_id"`
	Score  float64 `json:"score,omitempty"`
}

func (UserSignedUp) EventName() string { return "accounts.user_signed_up" }

type PlanChanged struct {
	UserID string `json:"user_id"`
	Plan   string `json:"plan"`
}

func (PlanChanged) EventName() string { return "billing.plan_changed" }

// printingT prints the failures of assertions, as a test would report
// them; a real test passes its *testing.T.
type printingT struct{ testing.TB }

func (printingT) Helper() {}
func (printingT) Errorf(format string, args ...any) {
	fmt.Printf(format+"\n", args...)
}

func Example() {
	fake := eventstest.NewFake()
	bus := fake.Bus() // in a test app: fake.Replace()
	ctx := context.Background()

	bus.Dispatch(ctx, UserSignedUp{UserID: "u1"})
	bus.Dispatch(ctx, PlanChanged{UserID: "u1", Plan: "pro"})
	// The fake encodes each event as the bus does: this one fails.
	fmt.Println(bus.Dispatch(ctx, UserSignedUp{UserID: "u2", Score: math.NaN()}))

	t := printingT{}
	fmt.Println(eventstest.AssertDispatched(t, fake, func(e UserSignedUp) bool { return e.UserID == "u1" }))
	fmt.Println(eventstest.AssertDispatchedTimes[PlanChanged](t, fake, 1))
	fmt.Println(eventstest.Dispatched[PlanChanged](fake)[0].Plan)
	for _, d := range fake.All() {
		fmt.Println(d.Event.EventName(), string(d.Payload))
	}

	// Failing assertions list what was dispatched.
	eventstest.AssertDispatched(t, fake, func(e UserSignedUp) bool { return e.UserID == "u2" })
	eventstest.AssertNotDispatched[PlanChanged](t, fake)
	fake.AssertNothingDispatched(t)

	fake.Clear()
	eventstest.AssertDispatched[UserSignedUp](t, fake, nil)
	fmt.Println(fake.AssertNothingDispatched(t))
	// Output:
	// events: dispatch accounts.user_signed_up: the event does not encode to JSON: json: unsupported value: NaN
	// true
	// true
	// pro
	// accounts.user_signed_up {"user_id":"u1"}
	// billing.plan_changed {"user_id":"u1","plan":"pro"}
	// eventstest: no dispatched accounts.user_signed_up event matched; dispatched 2 event(s):
	// 	accounts.user_signed_up {"user_id":"u1"}
	// 	billing.plan_changed {"user_id":"u1","plan":"pro"}
	// eventstest: billing.plan_changed was dispatched 1 time(s), want 0; dispatched 2 event(s):
	// 	accounts.user_signed_up {"user_id":"u1"}
	// 	billing.plan_changed {"user_id":"u1","plan":"pro"}
	// eventstest: want no event dispatched; dispatched 2 event(s):
	// 	accounts.user_signed_up {"user_id":"u1"}
	// 	billing.plan_changed {"user_id":"u1","plan":"pro"}
	// eventstest: no accounts.user_signed_up event was dispatched; nothing was dispatched
	// true
}
