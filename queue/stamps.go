package queue

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"

	"github.com/navree/navree/queue/internal/driver"
)

// stamp writes every feature's part of a job's stored row, from the
// options its dispatch resolved and its envelope, each checking what its
// feature needs of them: the seam where a feature plugs into a dispatch.
// Each stamp is a function of this file, called here in order (debounce
// before uniqueness, whose key column it takes); what two features
// cannot share is refused before, by exclusions. The calls are written
// out, not a list of functions: through a function value the options and
// the envelope would escape to the heap, two allocations and 400 bytes
// a dispatch.
func stamp(o *Options, e *Envelope, now int64, job *driver.Job) error {
	stampPriority(o, job)
	if err := stampDebounce(o, e, now, job); err != nil {
		return err
	}
	if err := stampLimit(o, e, job); err != nil {
		return err
	}
	if err := stampRate(o, e, job); err != nil {
		return err
	}
	if err := stampFair(o, e, job); err != nil {
		return err
	}
	return stampUnique(o, e, now, job)
}

// stampPriority: the job's priority, in range (resolve checked it).
func stampPriority(o *Options, job *driver.Job) { job.Priority = o.Priority }

// stampDebounce: a debounced job waits For after its last dispatch (at
// most MaxWait after its first), under its type's debounce key.
func stampDebounce(o *Options, e *Envelope, now int64, job *driver.Job) error {
	if o.Debounce.IsZero() {
		return nil
	}
	if e.Keys.Debounce != "" {
		if err := checkText("the debounce key of "+e.Name, e.Keys.Debounce, MaxUniqueKeyLen); err != nil {
			return err
		}
	}
	maxWait := cmp.Or(o.Debounce.MaxWait, 10*o.Debounce.For)
	job.UniqueKey, job.DebounceMaxMs = e.Name+debounceKeyMark+e.Keys.Debounce, ceilMs(maxWait)
	job.AvailableAt = now + ceilMs(max(e.Delay, o.Debounce.For))
	return nil
}

// stampLimit: a concurrency limit, by its key (the job's type by
// default).
func stampLimit(o *Options, e *Envelope, job *driver.Job) error {
	if o.ConcurrencyLimit <= 0 {
		return nil
	}
	job.LimitKey, job.LimitMax = cmp.Or(e.Keys.Concurrency, e.Name), o.ConcurrencyLimit
	return checkText("the concurrency key of "+e.Name, job.LimitKey, MaxUniqueKeyLen)
}

// stampRate: a rate limit, by its key (the job's type by default).
func stampRate(o *Options, e *Envelope, job *driver.Job) error {
	if o.RateLimit.IsZero() {
		return nil
	}
	job.RateKey, job.Rate = cmp.Or(e.Keys.Rate, e.Name), o.RateLimit.driver()
	return checkText("the rate key of "+e.Name, job.RateKey, MaxUniqueKeyLen)
}

// stampFair: fairness, by its group's key (the job's type by default).
func stampFair(o *Options, e *Envelope, job *driver.Job) error {
	if !o.Fair {
		return nil
	}
	job.FairKey = cmp.Or(e.Keys.Fairness, e.Name)
	return checkText("the fairness key of "+e.Name, job.FairKey, MaxUniqueKeyLen)
}

// stampUnique: a unique job's key, the envelope's or its payload's hash,
// and how long it holds it; a debounced job keeps the key it has.
func stampUnique(o *Options, e *Envelope, now int64, job *driver.Job) error {
	switch {
	case job.UniqueKey != "":
	case e.UniqueKey != nil:
		if err := checkText("the unique key of "+e.Name, *e.UniqueKey, MaxUniqueKeyLen); err != nil {
			return err
		}
		job.UniqueKey = e.Name + "|key:" + *e.UniqueKey
	case o.UniqueFor > 0:
		sum := sha256.Sum256(e.Payload)
		job.UniqueKey = e.Name + "|payload:" + hex.EncodeToString(sum[:])
	}
	if job.UniqueKey != "" && o.UniqueFor > 0 {
		job.UniqueUntil = now + ceilMs(o.UniqueFor)
	}
	return nil
}
