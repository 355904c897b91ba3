package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/navree/navree/queue/internal/driver"
)

// MaxErrorLen bounds the error kept with a released or failed job, in
// bytes; a longer one is cut and ends in "…".
const MaxErrorLen = 8 << 10

// attemptError is a failed attempt: its message, and whether retrying can
// help.
type attemptError struct {
	msg       string
	permanent bool
	cancelled bool // by a cancel request
	// interrupted: by the worker's stop; the job goes back to wait, its
	// attempt not spent.
	interrupted bool
	stack       string // for a panic
	// snooze, when set, is not a failure: the handler asked (Snooze) for
	// the job to wait that long and run the same attempt again.
	snooze *snooze
}

// run runs one attempt of job in slot s and records its outcome, unless
// the watchdog abandoned it meanwhile: then it reports false.
func (w *worker) run(s *slot, job *driver.Job) bool {
	n := w.attempts.Add(1)
	s.job, s.start = job, time.Now()
	if job.TimeoutMs > 0 {
		s.abandonAt.Store(s.start.Add(time.Duration(job.TimeoutMs)*time.Millisecond + abandonAfter).UnixNano())
	} else {
		s.abandonAt.Store(0)
	}
	ctx := s.begin(w.jobCtx, job)
	s.attempt.Store(n)
	obs := w.cfg.Observer
	wait := max(0, w.cfg.Clock.Now().UnixMilli()-job.AvailableAt) // how long the job had been due
	if obs != nil {
		ctx = obs.Started(ctx, job, wait)
	}
	failure := w.call(ctx, s, job)
	w.timed(job, wait, time.Since(s.start))
	if obs != nil {
		msg := ""
		if failure != nil && failure.snooze == nil {
			msg = failure.msg
		}
		obs.Ran(ctx, job, msg)
	}
	s.end()
	if !s.attempt.CompareAndSwap(n, 0) {
		return false
	}
	w.record(job, time.Since(s.start).Milliseconds(), wait, failure)
	return true
}

// record stores and logs the outcome of an attempt that ran for ms
// milliseconds, its job due for wait when it started: successes go to the
// completer, failures are released for a retry or moved to the failed
// jobs.
func (w *worker) record(job *driver.Job, ms, wait int64, failure *attemptError) {
	if failure == nil {
		w.done.in <- success{job: job, ms: ms, wait: wait} // counted once stored
		return
	}
	if failure.interrupted {
		w.backToWait(job, ms)
		return
	}
	if failure.snooze != nil {
		if job.Snoozes < w.cfg.MaxSnoozes {
			w.snoozeJob(job, ms, failure.snooze)
			return
		}
		msg := fmt.Sprintf("asked to snooze for %s after %d snoozes, the most queue.max_snoozes allows", failure.snooze.d, job.Snoozes)
		if failure.snooze.reason != "" {
			msg = fmt.Sprintf("snoozed %d times, the most queue.max_snoozes allows: %s", job.Snoozes, failure.snooze.reason)
		}
		failure = &attemptError{msg: msg,
			permanent: true}
	}
	ctx := w.jobCtx
	now := w.cfg.Clock.Now().UnixMilli()
	kept := driver.Failure{Attempt: job.Attempts, At: now, Ms: ms, Worker: job.ReservedBy, Flow: job.Flow, Limit: job.LimitKey}
	attrs := attemptAttrs(make([]slog.Attr, 0, 10), job, ms)
	var acted bool
	var err error
	var level slog.Level
	var count *atomic.Int64 // released or failed, if stored
	outcome := Released
	retry := !failure.permanent && job.Attempts < job.MaxAttempts
	if retry && job.BadBackoff != "" { // read only now: a job that succeeds needs none
		failure = &attemptError{msg: fmt.Sprintf("%s; and the stored job does not read: column backoff holds %q, not exponential:BASE_MS:MAX_MS or fixed:MS, so no retry can be scheduled",
			failure.msg, Cut(job.BadBackoff, 40)), stack: failure.stack}
		retry = false
	}
	kept.Error = storable(failure.msg)
	if retry {
		delay := job.Backoff.Delay(job.Attempts)
		err = retried(func() (err error) {
			acted, err = w.cfg.Store.Release(ctx, job.ID, job.Attempts, now+ceilMs(delay), kept)
			return err
		})
		count = &w.released
		if acted {
			w.putBack(job)
		}
		if acted && err == nil && delay <= 0 {
			w.cfg.Waker.Wake() // due now: the fetcher does not search when a handler comes free
		}
		level, attrs = slog.LevelWarn, append(attrs, slog.String("outcome", "released"), slog.Float64("retry_in_secs", delay.Seconds()), slog.String("error", failure.msg))
	} else {
		err = retried(func() (err error) {
			acted, err = w.cfg.Store.Fail(ctx, job.ID, job.Attempts, kept)
			return err
		})
		if job.LimitKey != "" && acted {
			w.limitedEnded(job)
		}
		if (job.Flow != "" || job.LimitKey != "") && acted {
			w.cfg.Waker.Wake() // its flow's catch, its dependants that run if it failed, the next job of its key
		}
		count, outcome = &w.failed, Failed
		level, attrs = slog.LevelError, append(attrs, slog.String("outcome", "failed"), slog.String("error", failure.msg))
		if failure.cancelled {
			outcome = Cancelled
			level, attrs[len(attrs)-2] = slog.LevelWarn, slog.String("outcome", "cancelled")
			if err == nil {
				if err := w.cfg.Store.ForgetCancel(ctx, job.ID); err != nil {
					w.log.WarnContext(ctx, "forget the request to cancel a job; the next cancel forgets it", "job_id", job.ID, "error", err)
				}
			}
		}
	}
	if failure.stack != "" {
		attrs = append(attrs, slog.String("stack", failure.stack))
	}
	if w.opts.Failed != nil {
		w.opts.Failed(job, retry, kept.Error)
	}
	w.count(job, count, outcome, ms, acted, err)
	level, attrs = recorded(level, attrs, acted, err)
	w.logAttempt(level, attrs)
}

// snoozeJob puts job back to wait for d, its attempt given back, and
// logs it.
func (w *worker) snoozeJob(job *driver.Job, ms int64, s *snooze) {
	d := s.d
	var acted bool
	err := retried(func() (err error) {
		acted, err = w.cfg.Store.Snooze(w.jobCtx, job.ID, job.Attempts, w.cfg.Clock.Now().UnixMilli()+ceilMs(d))
		return err
	})
	if acted {
		w.putBack(job)
	}
	if acted && err == nil && d <= 0 {
		w.cfg.Waker.Wake() // due now: the fetcher does not search when a handler comes free
	}
	w.count(job, &w.snoozed, Snoozed, ms, acted, err)
	attrs := append(attemptAttrs(make([]slog.Attr, 0, 9), job, ms), slog.String("outcome", "snoozed"),
		slog.Float64("snooze_secs", d.Seconds()), slog.Int("snoozes", job.Snoozes+1))
	if s.reason != "" {
		attrs = append(attrs, slog.String("reason", s.reason))
	}
	level, attrs := recorded(slog.LevelInfo, attrs, acted, err)
	w.logAttempt(level, attrs)
}

// count counts an attempt of job that ran ms whose outcome was stored as
// its outcome (in counter, its queue's tally and the Observer), and one
// whose outcome was not as lost.
func (w *worker) count(job *driver.Job, counter *atomic.Int64, outcome Outcome, ms int64, stored bool, err error) {
	if stored && err == nil {
		counter.Add(1)
		w.tallied(job.Queue, counter)
		if w.cfg.Observer != nil {
			w.cfg.Observer.Finished(job, outcome, ms)
		}
	} else {
		w.lost.Add(1)
	}
	if w.opts.Counted != nil {
		w.opts.Counted(w.stats())
	}
}

// recorded adds to an attempt's log line what storing its outcome did:
// an error, or a reservation another worker had taken over (this one was
// presumed dead, and the other attempt is the one that counts).
func recorded(level slog.Level, attrs []slog.Attr, stored bool, err error) (slog.Level, []slog.Attr) {
	switch {
	case err != nil:
		return slog.LevelError, append(attrs, slog.String("record_error", err.Error()))
	case !stored:
		return max(level, slog.LevelWarn), append(attrs, slog.Bool("reservation_lost", true))
	}
	return level, attrs
}

// call runs the job's handler, with a context from ctx that ends at the
// job's timeout, and turns an error, a panic or a timeout into a failure;
// an error once ctx was cancelled by a cancel request (its cause
// ErrCancelled) into the failure "cancelled", which is not retried; and
// any return once the worker's stop interrupted ctx (its cause
// ErrInterrupted), nil too, into an interruption.
func (w *worker) call(ctx context.Context, s *slot, job *driver.Job) (failure *attemptError) {
	if msg := unreadable(job); msg != "" {
		return &attemptError{msg: "the stored job does not read: " + msg, permanent: true}
	}
	if job.Attempts > job.MaxAttempts {
		// Taken over after its last attempt's worker died, or lost the
		// database, before it recorded an outcome: running it again would
		// go past its attempts, and a job that kills its worker would
		// never stop coming back.
		return &attemptError{msg: fmt.Sprintf("attempt %d of %[1]d ended without an outcome (its worker stopped, or lost the database, before recording one), and no attempt is left",
			job.MaxAttempts), permanent: true}
	}
	handle, ok := w.cfg.Handler(job.Name)
	if !ok {
		return &attemptError{msg: fmt.Sprintf("no handler for job type %q in this binary", job.Name), permanent: true}
	}
	if job.TimeoutMs > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(job.TimeoutMs)*time.Millisecond)
		defer cancel()
	}
	defer func() {
		if p := recover(); p != nil {
			failure = &attemptError{msg: fmt.Sprintf("panic: %v", p), stack: string(debug.Stack())}
		}
	}()
	err := handle(ctx, job)
	if s.handlerReturned() {
		// Interrupted before it returned, whatever it returned: one that
		// returns nil when its context ends (<-ctx.Done(); return nil)
		// did not finish either, and its job goes back on its queue.
		return &attemptError{msg: "interrupted", interrupted: true}
	}
	if err == nil {
		return nil
	}
	snooze := snoozed(err)
	switch {
	case errors.Is(context.Cause(ctx), ErrCancelled):
		return &attemptError{msg: driver.CancelledError, permanent: true, cancelled: true}
	case snooze != nil:
		return &attemptError{msg: "snoozed", snooze: snooze}
	case IsPermanent(err):
		return &attemptError{msg: err.Error(), permanent: true}
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &attemptError{msg: fmt.Sprintf("timed out after %s: %v", time.Duration(job.TimeoutMs)*time.Millisecond, err)}
	}
	return &attemptError{msg: err.Error()}
}

// unreadable says what of a job's stored row the worker cannot run it
// with, or "".
func unreadable(job *driver.Job) string {
	switch {
	case job.Corrupt != "":
		return job.Corrupt
	case job.MaxAttempts < 1:
		return fmt.Sprintf("column max_attempts holds %d, not 1 or more", job.MaxAttempts)
	case job.TimeoutMs < 0:
		return fmt.Sprintf("column timeout_ms holds %d, not 0 (no limit) or more", job.TimeoutMs)
	}
	return ""
}

// Cut shortens s to at most n bytes, on a character boundary, ending in
// "…" when it cut.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	n -= len("…")
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// storable makes a text from outside (a handler's error, a panic's
// value) storable in every database: invalid UTF-8 and NUL bytes, which
// PostgreSQL refuses in text columns, become U+FFFD, and a text over
// MaxErrorLen bytes is cut on a character boundary and ends in "…".
func storable(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	return Cut(s, MaxErrorLen)
}

// logAttempt writes an attempt's log line. It hands the record to the
// handler itself: the line has no use for its caller's source position,
// which slog would look up for every line (a tenth of its cost).
func (w *worker) logAttempt(level slog.Level, attrs []slog.Attr) {
	h := w.log.Handler()
	if !h.Enabled(w.jobCtx, level) {
		return
	}
	r := slog.NewRecord(time.Now(), level, "job attempt", 0)
	r.AddAttrs(attrs...)
	_ = h.Handle(w.jobCtx, r) // as slog.Logger does: a handler reports its own errors
}

// attemptAttrs appends the attributes every attempt's log line has.
func attemptAttrs(attrs []slog.Attr, job *driver.Job, ms int64) []slog.Attr {
	return append(attrs, slog.String("name", job.Name), slog.String("job_id", job.ID), slog.String("queue", job.Queue),
		slog.Int("attempt", job.Attempts), slog.Int64("duration_ms", ms))
}

// Permanent marks err as a failure that retrying cannot help: the job
// fails at once, without using its remaining attempts, with err's text.
// errors.Is and errors.As see err through it.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanent{err: err}
}

type permanent struct{ err error }

func (p *permanent) Error() string { return p.err.Error() }
func (p *permanent) Unwrap() error { return p.err }

// IsPermanent reports whether err, or an error it wraps, was made by
// [Permanent].
func IsPermanent(err error) bool {
	var p *permanent // declared here: errors.As moves it to the heap
	return errors.As(err, &p)
}

// Snooze returns an error that, returned by a handler, puts its job back
// to wait for d (0 or less: due at once) and runs the same attempt again
// then: the attempt is not spent, and no error is kept. A job snoozes
// at most Config.MaxSnoozes times. It may be wrapped: the worker finds it
// in the error's chain.
func Snooze(d time.Duration) error { return &snooze{d: d} }

// SnoozeBecause is Snooze for a reason of the worker's own, which the
// snooze's log line gives, and the error of the snooze past the most.
func SnoozeBecause(d time.Duration, reason string) error { return &snooze{d: d, reason: reason} }

type snooze struct {
	d      time.Duration
	reason string
}

func (s *snooze) Error() string { return fmt.Sprintf("snooze for %s", s.d) }

// snoozed returns the snooze in err's chain, or nil.
func snoozed(err error) *snooze {
	var s *snooze
	if errors.As(err, &s) {
		return s
	}
	return nil
}

// ceilMs is d in whole milliseconds, rounded up.
func ceilMs(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}
