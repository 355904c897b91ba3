package queue

import (
	"strings"
	"testing"
	"time"
)

// TestWhatCannotBeCombinedIsRefused walks every use that another may
// exclude, alone and in every pair: a pair in exclusions is refused with
// an error naming the job, both uses and why; any other pair, and every
// use alone, is not. A use added to usesOf without a case here fails,
// and so does a rule added to exclusions or taken from it without
// changing the list here.
func TestWhatCannotBeCombinedIsRefused(t *testing.T) {
	key := "k"
	with := map[use]func(o *Options, e *Envelope, step *bool){
		useDebounce:  func(o *Options, _ *Envelope, _ *bool) { o.Debounce = Debounce{For: time.Second} },
		useUniqueFor: func(o *Options, _ *Envelope, _ *bool) { o.UniqueFor = time.Minute },
		useUniqueKey: func(_ *Options, e *Envelope, _ *bool) { e.UniqueKey = &key },
		useLimit:     func(o *Options, _ *Envelope, _ *bool) { o.ConcurrencyLimit = 2 },
		useStep:      func(_ *Options, _ *Envelope, step *bool) { *step = true },
	}
	if len(with) != len(useNames) {
		t.Fatalf("%d uses set here, %d named: give each use a case", len(with), len(useNames))
	}
	// What users are told cannot be combined (docs/flow-control.md), and
	// why; a concurrency limit with unique jobs, and limits on steps, are
	// combined.
	why := map[[2]use]string{}
	for _, x := range []struct {
		a, b use
		why  string
	}{
		{useDebounce, useUniqueFor, "a debounced job replaces the one waiting, a unique one keeps it; choose one"},
		{useDebounce, useUniqueKey, "a debounced job replaces the one waiting, a unique one keeps it; set Keys.Debounce instead"},
		{useLimit, useDebounce, "a job held by its limit is not replaced by the next dispatch; choose one"},
		{useDebounce, useStep, "its flow runs each step once"},
		{useUniqueFor, useStep, "its flow already runs each step once"},
		{useUniqueKey, useStep, "its flow already runs each step once"},
	} {
		why[[2]use{x.a, x.b}], why[[2]use{x.b, x.a}] = x.why, x.why
	}
	for a := range useNames {
		for b := range useNames {
			var o Options
			var e Envelope
			var step bool
			with[a](&o, &e, &step)
			with[b](&o, &e, &step)
			if got := usesOf(o, e, step); got != a|b {
				t.Fatalf("usesOf(%s, %s) = %b; want %b", useNames[a], useNames[b], got, a|b)
			}
			err := excluded("crm.export", a|b)
			reason, refused := why[[2]use{a, b}]
			switch {
			case !refused && err != nil:
				t.Errorf("%s with %s: %v; want it allowed", useNames[a], useNames[b], err)
			case refused && err == nil:
				t.Errorf("%s with %s: allowed; want it refused because %s", useNames[a], useNames[b], reason)
			case refused && (!strings.HasPrefix(err.Error(), "queue: job crm.export: ") || !strings.Contains(err.Error(), useNames[a]) ||
				!strings.Contains(err.Error(), useNames[b]) || !strings.Contains(err.Error(), "cannot be combined: "+reason)):
				t.Errorf("%s with %s: %q; want the job, both and why", useNames[a], useNames[b], err)
			}
		}
	}
}
