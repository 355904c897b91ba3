package queue_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gofrs/uuid/v5"
	"github.com/navree/navree/db"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/internal/driver"
	"go.uber.org/fx"
)

// Blob carries data, which jobs should not; the queue takes up to 1 MiB.
type Blob struct {
	Data string `json:"data"`
}

func (Blob) JobName() string { return "test.blob" }

// Verbose fails with a huge error.
type Verbose struct{}

func (Verbose) JobName() string           { return "test.verbose" }
func (Verbose) JobOptions() queue.Options { return queue.Options{MaxAttempts: 1} }

func TestPayloadSizeLimit(t *testing.T) {
	t.Parallel()
	var got int
	regs := map[string]queue.Registration{"test.blob": queue.HandlerOf[Blob](queue.HandlerFunc[Blob](func(ctx context.Context, j Blob, jc queue.JobContext) error {
		got = len(j.Data)
		return nil
	}))}
	eachWith(t, queue.Config{}, regs, func(t *testing.T, f fixture) {
		big := strings.Repeat("x", 2<<20)
		_, err := f.q.Dispatch(ctx, Blob{Data: big})
		if !errors.Is(err, queue.ErrPayloadTooLarge) || !strings.Contains(err.Error(), "the payload of test.blob is 2097163 bytes, over the limit of 1048576") {
			t.Fatalf("a 2 MiB payload: %v", err)
		}
		if _, err := f.q.DispatchMany(ctx, Blob{Data: "small"}, Blob{Data: big}); !errors.Is(err, queue.ErrPayloadTooLarge) {
			t.Fatalf("DispatchMany with a 2 MiB payload: %v", err)
		}
		if f.pending(t, "default") != 0 {
			t.Fatal("a refused batch stored jobs")
		}
		// Just under the limit: stored and run whole.
		near := strings.Repeat("y", queue.MaxPayloadBytes-len(`{"data":""}`))
		if _, err := f.q.Dispatch(ctx, Blob{Data: near}); err != nil {
			t.Fatal(err)
		}
		if stats := f.runPending(t); stats.Succeeded != 1 || got != len(near) {
			t.Fatalf("the 1 MiB job: %+v, handler saw %d bytes", stats, got)
		}
	})
}

func TestStoredErrorsAreBounded(t *testing.T) {
	t.Parallel()
	regs := map[string]queue.Registration{"test.verbose": queue.HandlerOf[Verbose](queue.HandlerFunc[Verbose](func(context.Context, Verbose, queue.JobContext) error {
		return errors.New(strings.Repeat("é", 20_000)) // 40 KB of two-byte runes
	}))}
	eachWith(t, queue.Config{}, regs, func(t *testing.T, f fixture) {
		f.q.Dispatch(ctx, Verbose{})
		f.runPending(t)
		failed := f.failed(t)
		if len(failed) != 1 {
			t.Fatalf("%d failed jobs", len(failed))
		}
		e := failed[0].Error
		if len(e) > queue.MaxErrorLen || !strings.HasSuffix(e, "…") || !utf8.ValidString(e) {
			t.Fatalf("stored error of %d bytes (limit %d), valid UTF-8 %v, ends %q", len(e), queue.MaxErrorLen, utf8.ValidString(e), e[len(e)-6:])
		}
	})
}

// Binary fails with an error that quotes binary data: a NUL byte and
// bytes that are not UTF-8.
type Binary struct{}

func (Binary) JobName() string { return "test.binary" }

// TestUnstorableErrorsAreStoredCleanAndFail: an error text PostgreSQL
// cannot store (a NUL, invalid UTF-8) is made storable, so the job is
// released and retried like any other and fails after its attempts,
// instead of staying reserved and coming back forever.
func TestUnstorableErrorsAreStoredCleanAndFail(t *testing.T) {
	t.Parallel()
	runs := 0
	regs := map[string]queue.Registration{"test.binary": queue.HandlerOf[Binary](queue.HandlerFunc[Binary](func(context.Context, Binary, queue.JobContext) error {
		runs++
		return errors.New("row 7: \x00\xff\xfe is not a name")
	}))}
	eachWith(t, queue.Config{}, regs, func(t *testing.T, f fixture) {
		runs = 0
		id, _ := f.q.Dispatch(ctx, Binary{})
		var total queue.WorkStats
		for range 10 { // three attempts, then nothing left; a cycle would go on
			stats := f.runPending(t)
			total.Processed += stats.Processed
			total.Released += stats.Released
			total.Failed += stats.Failed
			total.Lost += stats.Lost
			f.clock.Advance(25 * time.Hour) // past any backoff and any takeover
		}
		if runs != 3 || counted(total) != (counts{Processed: 3, Released: 2, Failed: 1}) {
			t.Fatalf("the handler ran %d times, %+v; want 3 attempts: 2 released, 1 failed", runs, total)
		}
		failed := f.failed(t)
		if len(failed) != 1 || failed[0].ID != id || failed[0].Attempts != 3 || failed[0].Error != "row 7: \uFFFD\uFFFD is not a name" {
			t.Fatalf("failed jobs %+v; want the job after 3 attempts, its error made storable", failed)
		}
		if f.pending(t, "default") != 0 {
			t.Fatal("the job is still pending")
		}
		if strings.Contains(f.logs.String(), "record_error") {
			t.Fatalf("an outcome was not recorded:\n%s", f.logs)
		}
	})
}

// TestAJobTakenOverAfterItsLastAttemptFails: a job whose worker died
// during its last attempt (a crash, a job that kills its worker, an
// outcome the database would not take) is not run past its attempts when
// it is taken over: it fails, saying why.
func TestAJobTakenOverAfterItsLastAttemptFails(t *testing.T) {
	t.Parallel()
	ran := false
	regs := map[string]queue.Registration{"test.verbose": queue.HandlerOf[Verbose](queue.HandlerFunc[Verbose](func(context.Context, Verbose, queue.JobContext) error {
		ran = true
		return nil
	}))}
	eachWith(t, queue.Config{}, regs, func(t *testing.T, f fixture) {
		ran = false
		id, _ := f.q.Dispatch(ctx, Verbose{}) // MaxAttempts: 1
		if j := f.reserve(t, "default"); j == nil || j.ID != id {
			t.Fatal("nothing to reserve") // by a worker that then dies
		}
		f.clock.Advance(91 * time.Second) // its timeout plus 30 s
		if stats := f.runPending(t); counted(stats) != (counts{Processed: 1, Failed: 1}) {
			t.Fatalf("the takeover %+v; want 1 failed", stats)
		}
		if ran {
			t.Fatal("the job ran a second attempt of one")
		}
		failed := f.failed(t)
		want := "attempt 1 of 1 ended without an outcome (its worker stopped, or lost the database, before recording one), and no attempt is left"
		if len(failed) != 1 || failed[0].ID != id || failed[0].Attempts != 1 || failed[0].Error != want {
			t.Fatalf("failed jobs %+v; want the job, 1 attempt, %q", failed, want)
		}
	})
}

// TestQueueNamesAreRestricted: a queue name is letters, digits and - _ . :
// so that every queue can be named with queue:work --queue.
func TestQueueNamesAreRestricted(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, f fixture) {
		for _, name := range []string{"mail,sms", " mail", "mail ", "", "caf\u00e9", "a/b", strings.Repeat("q", queue.MaxQueueNameLen+1)} {
			e, _ := queue.EnvelopeOf(ExportContacts{})
			e.Options.Queue = name
			want := fmt.Sprintf(`queue: invalid queue name %q: use 1 to 100 ASCII letters, digits, '-', '_', '.' or ':'`, name)
			if _, err := f.q.Push(ctx, e); name != "" && (err == nil || err.Error() != want) { // "": the default queue
				t.Errorf("Push on queue %q: %v, want %s", name, err, want)
			}
			if _, err := f.q.Work(ctx, queue.WorkOptions{Queues: []string{name}}); err == nil || err.Error() != want {
				t.Errorf("Work on queue %q: %v, want %s", name, err, want)
			}
		}
		for _, name := range []string{"mail", "crm:exports-2.high_prio", strings.Repeat("q", queue.MaxQueueNameLen)} {
			e, _ := queue.EnvelopeOf(ExportContacts{})
			e.Options.Queue = name
			if _, err := f.q.Push(ctx, e); err != nil {
				t.Errorf("Push on queue %q: %v", name, err)
			}
		}
	})
}

// insertRow writes a job's row by hand, as another program or a person
// might, with the values given for the columns that matter here.
func insertRow(t *testing.T, f fixture, name string, maxAttempts, backoff, timeoutMs, reservedAt any, attempts int) string {
	t.Helper()
	id := uuid.Must(uuid.NewV7()).String()
	_, err := f.db.NewRaw("INSERT INTO jobs (id, queue, name, payload, max_attempts, backoff, timeout_ms, attempts, available_at, reserved_at, created_at) "+
		"VALUES (?, 'default', ?, '{}', ?, ?, ?, ?, ?, ?, ?)",
		id, name, maxAttempts, backoff, timeoutMs, attempts, t0.UnixMilli(), reservedAt, t0.UnixMilli()).Exec(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestCorruptRowsFailAndHoldNoneBack: a row whose values do not read
// (text in a number's column, on SQLite) or make no sense (no attempts, a
// negative timeout, a backoff that does not parse) becomes a failed job
// with an error naming the column, and the good jobs reserved in the same
// batch run at once; so does one taken over.
func TestCorruptRowsFailAndHoldNoneBack(t *testing.T) {
	t.Parallel()
	regs := map[string]queue.Registration{"test.binary": queue.HandlerOf[Binary](queue.HandlerFunc[Binary](func(context.Context, Binary, queue.JobContext) error {
		return errors.New("it failed")
	}))}
	for _, b := range backends[1:] {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b.driver, b.url(t), queue.Config{Workers: 10}, regs)
			good := []string{
				insertRow(t, f, "contacts.export", 3, "fixed:1000", 60000, nil, 0),
				insertRow(t, f, "contacts.export", 3, "fixed:1000", 60000, nil, 0),
			}
			want := map[string]string{ // id: error
				insertRow(t, f, "contacts.export", 0, "fixed:1000", 60000, nil, 0): "the stored job does not read: column max_attempts holds 0, not 1 or more",
				insertRow(t, f, "contacts.export", 3, "fixed:1000", -5, nil, 0):    "the stored job does not read: column timeout_ms holds -5, not 0 (no limit) or more",
				insertRow(t, f, "test.binary", 3, "sometimes", 60000, nil, 0):      `it failed; and the stored job does not read: column backoff holds "sometimes", not exponential:BASE_MS:MAX_MS or fixed:MS, so no retry can be scheduled`,
			}
			// A controls record written by hand that is no JSON object.
			controlled := insertRow(t, f, "contacts.export", 3, "fixed:1000", 60000, nil, 0)
			if _, err := f.db.NewRaw("UPDATE jobs SET controls = 'five a minute' WHERE id = ?", controlled).Exec(ctx); err != nil {
				t.Fatal(err)
			}
			want[controlled] = `the stored job does not read: column controls holds "five a minute", not a JSON object of settings`
			if b.name == "sqlite" { // SQLite keeps any value in any column
				want[insertRow(t, f, "contacts.export", "abc", "fixed:1000", 60000, nil, 0)] = `the stored job does not read: column max_attempts holds "abc", not a whole number`
				// Reserved long ago by a worker that died: taken over.
				want[insertRow(t, f, "contacts.export", "lots", "fixed:1000", 60000, t0.Add(-time.Hour).UnixMilli(), 1)] = `the stored job does not read: column max_attempts holds "lots", not a whole number`
			}
			stats, err := f.q.Work(ctx, queue.WorkOptions{Workers: 10, StopWhenEmpty: true})
			if err != nil || counted(stats) != (counts{Processed: len(good) + len(want), Succeeded: len(good), Failed: len(want)}) {
				t.Fatalf("%+v, %v; want %d succeeded, %d failed", stats, err, len(good), len(want))
			}
			failed := f.failed(t)
			if len(failed) != len(want) {
				t.Fatalf("%d failed jobs, want %d", len(failed), len(want))
			}
			for _, j := range failed {
				if want[j.ID] != j.Error {
					t.Errorf("failed job %s: %q, want %q", j.ID, j.Error, want[j.ID])
				}
			}
			if f.pending(t, "default") != 0 {
				t.Fatal("jobs are left")
			}
		})
	}
}

// TestFlagsHaveTheBoundsOfTheirSettings: a flag is bounded as its setting
// is (queue.workers: 1 to 10,000), and so is Work in code: a worker never
// starts a hundred million goroutines.
func TestFlagsHaveTheBoundsOfTheirSettings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"queue:work", "--workers", "100000000"}, "queue:work: --workers must be 1 to 10000, as queue.workers, not 100000000"},
		{[]string{"queue:work", "--workers=0"}, "queue:work: --workers must be 1 to 10000, as queue.workers, not 0"},
		{[]string{"queue:bench", "--workers", "10001"}, "queue:bench: --workers must be 1 to 10000, as queue.workers, not 10001"},
		{[]string{"queue:bench", "--dispatchers", "100000000"}, "queue:bench: --dispatchers must be 1 to 10000, not 100000000"},
		{[]string{"queue:bench", "--jobs", "0"}, "queue:bench: --jobs must be 1 to 100000000, not 0"},
		{[]string{"queue:bench", "--latency", "-1"}, "queue:bench: --latency must be 0 to 100000, not -1"},
		{[]string{"queue:bench", "--latency", "100000000"}, "queue:bench: --latency must be 0 to 100000, not 100000000"},
		{[]string{"queue:work", "--stop-timeout", "-5s"}, "queue:work: --stop-timeout is -5s; want 0s (no deadline) to 24h, such as 25s, as queue.stop_timeout"},
		{[]string{"queue:work", "--stop-timeout", "48h"}, "queue:work: --stop-timeout is 48h0m0s; want 0s (no deadline) to 24h, such as 25s, as queue.stop_timeout"},
	}
	for _, tt := range tests {
		if _, err := runApp(t, map[string]any{"queue.driver": "memory"}, tt.args, queue.Module()); err == nil || err.Error() != tt.want {
			t.Errorf("%v: %v, want %s", tt.args, err, tt.want)
		}
	}
	q, _ := queue.New(queue.Params{Config: queue.Config{Driver: queue.Memory}})
	if _, err := q.Work(ctx, queue.WorkOptions{Workers: 10_001}); err == nil || err.Error() != "queue: workers is 10001; want 1 to 10000" {
		t.Errorf("Work with 10,001 workers: %v", err)
	}
}

// TestFailedJobsComeInPages: Failed returns a page and the cursor of the
// next; queue:failed lists every failed job, oldest failure first, a page
// at a time.
func TestFailedJobsComeInPages(t *testing.T) {
	t.Parallel()
	eachMigrated(t, func(t *testing.T, url string) {
		q := localQueue(t, url, &clock{t: t0}, noop[ExportContacts]())
		store := queue.StoreOf(q)
		var ids []string
		failedAt := map[string]int{} // seconds after t0
		for i := range 250 {
			id, _ := q.Dispatch(ctx, ExportContacts{CompanyID: fmt.Sprint(i)})
			j, err := driver.ReserveOne(ctx, store, "default", t0.UnixMilli())
			if err != nil || j.ID != id {
				t.Fatalf("reserved %+v, %v", j, err)
			}
			if ok, err := store.Fail(ctx, j.ID, j.Attempts, driver.Failure{Error: "smtp refused the message", At: t0.Add(time.Duration(i%7) * time.Second).UnixMilli()}); !ok || err != nil {
				t.Fatal(ok, err)
			}
			ids = append(ids, id)
			failedAt[id] = i % 7
		}
		// Oldest failure first, then by id.
		slices.SortFunc(ids, func(a, b string) int {
			return cmp.Or(cmp.Compare(failedAt[a], failedAt[b]), strings.Compare(a, b))
		})
		var got []string
		var sizes []int
		for page := (queue.FailedQuery{}); ; {
			jobs, next, err := q.Inspector().Failed(ctx, page)
			if err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, len(jobs))
			for _, j := range jobs {
				got = append(got, j.ID)
				if string(j.Payload) == "" {
					t.Fatal("Failed gave a job without its payload")
				}
			}
			if next == "" {
				break
			}
			page.After = next
		}
		if !slices.Equal(got, ids) || !slices.Equal(sizes, []int{100, 100, 50}) {
			t.Fatalf("pages of %v; in order: %v", sizes, slices.Equal(got, ids))
		}
		if jobs, next, _ := q.Inspector().Failed(ctx, queue.FailedQuery{Limit: 250}); len(jobs) != 250 || next != "" {
			t.Fatalf("a page of 250: %d jobs, next %q; want all, and no next page", len(jobs), next)
		}
		for _, bad := range []queue.FailedQuery{{After: "yesterday"}, {Limit: queue.MaxFailedPage + 1}, {Limit: -1}} {
			if _, _, err := q.Inspector().Failed(ctx, bad); !errors.Is(err, queue.ErrInvalidQuery) {
				t.Errorf("Failed(%+v): %v", bad, err)
			}
		}
		if _, _, err := q.Inspector().Failed(ctx, queue.FailedQuery{After: "yesterday"}); err == nil ||
			err.Error() != `queue: list failed jobs: invalid jobs query: "yesterday" is not a cursor: pass the next cursor of the page before, or "" for the first page` {
			t.Errorf("a bad cursor: %v", err)
		}

		out, err := runApp(t, map[string]any{"database.url": url}, []string{"queue:failed"}, db.Module(), queue.Module(), fx.Options())
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != 251 {
			t.Fatalf("queue:failed printed %d lines, want a header and 250 jobs", len(lines))
		}
		if want := "ID                                    QUEUE    TYPE             ATTEMPTS  FAILED (UTC)         ERROR"; lines[0] != want {
			t.Fatalf("queue:failed's header: %q, want %q", lines[0], want)
		}
		for i, line := range lines[1:] {
			at := t0.Add(time.Duration(failedAt[ids[i]]) * time.Second).UTC().Format(time.DateTime)
			if want := ids[i] + "  default  contacts.export  1         " + at + "  smtp refused the message"; line != want {
				t.Fatalf("line %d: %q, want %q", i+1, line, want)
			}
		}
	})
}

// Control has a name PostgreSQL could not store.
type Control struct{}

func (Control) JobName() string { return "test.\x00control" }

// TestTextsFromOutsideAreCheckedWhenTheyCome: a payload, a unique key and
// a job name that no database could store (invalid UTF-8, a NUL byte, or
// over their bounds) are refused when they come, naming what and why,
// rather than failing in the database or later.
func TestTextsFromOutsideAreCheckedWhenTheyCome(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, f fixture) {
		e, _ := queue.EnvelopeOf(ExportContacts{})
		e.Payload = []byte("{\"company_id\":\"\xff\"}")
		if _, err := f.q.Push(ctx, e); err == nil || err.Error() != "queue: the payload of contacts.export is not valid UTF-8" {
			t.Errorf("a payload of invalid UTF-8: %v", err)
		}
		for key, want := range map[string]string{
			"user:\x00":               "queue: the unique key of contacts.export is not printable UTF-8: use no control characters or invalid bytes",
			"user:\xff":               "queue: the unique key of contacts.export is not printable UTF-8: use no control characters or invalid bytes",
			strings.Repeat("k", 1001): "queue: the unique key of contacts.export has 1001 bytes; want 1 to 1000",
		} {
			e, _ := queue.EnvelopeOf(ExportContacts{})
			e.UniqueKey = &key
			if _, err := f.q.Push(ctx, e); err == nil || err.Error() != want {
				t.Errorf("unique key %q: %v, want %s", key[:min(len(key), 10)], err, want)
			}
		}
		if f.pending(t, "default") != 0 {
			t.Fatal("a refused job was stored")
		}
	})
	q, err := queue.New(queue.Params{Config: queue.Config{Driver: queue.Memory}})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Handle(noop[Control]()); err == nil || !strings.HasPrefix(err.Error(), `queue: the job name "test.\x00control" of queue_test.Control at `) ||
		!strings.HasSuffix(err.Error(), " is not printable UTF-8: use no control characters or invalid bytes") {
		t.Errorf("registering a name with a NUL byte: %v", err)
	}
}

// Refused fails with what a mail server's 5xx would: no retry can help.
type Refused struct{}

func (Refused) JobName() string { return "test.refused" }

// TestPermanentErrorsFailAtOnce: a handler error made by queue.Permanent
// fails the job at its first attempt, with four attempts left, keeping
// the error's text; the handler's own error is still the one errors.Is
// finds.
func TestPermanentErrorsFailAtOnce(t *testing.T) {
	t.Parallel()
	cause := errors.New("550 mailbox unavailable")
	var returned error
	regs := map[string]queue.Registration{"test.refused": queue.HandlerOf[Refused](queue.HandlerFunc[Refused](func(context.Context, Refused, queue.JobContext) error {
		returned = fmt.Errorf("smtp refused the message: %w", queue.Permanent(cause))
		return returned
	}))}
	eachWith(t, queue.Config{}, regs, func(t *testing.T, f fixture) {
		e, _ := queue.EnvelopeOf(Refused{})
		e.Options.MaxAttempts = 5
		id, _ := f.q.Push(ctx, e)
		if stats := f.runPending(t); counted(stats) != (counts{Processed: 1, Failed: 1}) {
			t.Fatalf("%+v; want the first attempt failed for good", stats)
		}
		failed := f.failed(t)
		if len(failed) != 1 || failed[0].ID != id || failed[0].Attempts != 1 || failed[0].Error != "smtp refused the message: 550 mailbox unavailable" {
			t.Fatalf("failed jobs %+v", failed)
		}
		if !errors.Is(returned, cause) {
			t.Fatal("errors.Is does not see the cause through Permanent")
		}
	})
}
