package queue

import (
	"fmt"
	"strings"
)

// A use is something a dispatch asks of a job that another may exclude:
// an option, a key, or being a flow's step.
type use uint8

// The uses that some other use excludes.
const (
	useDebounce  use = 1 << iota // Options.Debounce
	useUniqueFor                 // Options.UniqueFor
	useUniqueKey                 // an envelope's UniqueKey
	useLimit                     // Options.ConcurrencyLimit
	useStep                      // a step of a chain, batch or workflow
)

// useNames name the uses in errors, as the user wrote them.
var useNames = map[use]string{
	useDebounce:  "Debounce",
	useUniqueFor: "UniqueFor",
	useUniqueKey: "an envelope's UniqueKey",
	useLimit:     "ConcurrencyLimit",
	useStep:      "a flow's step",
}

// exclusions are every pair of uses that cannot be combined, and why: the
// one place such a rule is written, checked once a job's uses are known
// (excluded). A feature that cannot be combined with another adds its
// pair here, and its test in TestWhatCannotBeCombinedIsRefused.
var exclusions = []struct {
	a, b use
	why  string
}{
	{useDebounce, useUniqueFor, "a debounced job replaces the one waiting, a unique one keeps it; choose one"},
	{useDebounce, useUniqueKey, "a debounced job replaces the one waiting, a unique one keeps it; set Keys.Debounce instead"},
	{useLimit, useDebounce, "a job held by its limit is not replaced by the next dispatch; choose one"},
	{useDebounce, useStep, "its flow runs each step once"},
	{useUniqueFor, useStep, "its flow already runs each step once"},
	{useUniqueKey, useStep, "its flow already runs each step once"},
}

// usesOf are the uses of the dispatch of e with the options o, as a
// flow's step or not.
func usesOf(o Options, e Envelope, step bool) use {
	var u use
	for _, c := range []struct {
		on  bool
		use use
	}{
		{!o.Debounce.IsZero(), useDebounce},
		{o.UniqueFor > 0, useUniqueFor},
		{e.UniqueKey != nil, useUniqueKey},
		{o.ConcurrencyLimit > 0, useLimit},
		{step, useStep},
	} {
		if c.on {
			u |= c.use
		}
	}
	return u
}

// excluded refuses the uses u of the job name when two of them cannot
// be combined, naming both and why.
func excluded(name string, u use) error {
	var refused []string
	for _, x := range exclusions {
		if u&x.a != 0 && u&x.b != 0 {
			refused = append(refused, fmt.Sprintf("%s and %s cannot be combined: %s", useNames[x.a], useNames[x.b], x.why))
		}
	}
	if len(refused) == 0 {
		return nil
	}
	return fmt.Errorf("queue: job %s: %s", name, strings.Join(refused, "; and "))
}
