package queue_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofrs/uuid/v5"

	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/internal/backoff"
	"github.com/navree/navree/queue/internal/driver"
)

// Export3 is a job type at its payload's version 3, once named
// test.export_old: version 2 renamed "company" to "company_id", version
// 3 added "format" ("csv" for the payloads before it, which need a
// company).
type Export3 struct {
	CompanyID string `json:"company_id"`
	Format    string `json:"format"`
}

func (Export3) JobName() string      { return "test.export_versions" }
func (Export3) JobAliases() []string { return []string{"test.export_old"} }
func (Export3) PayloadUpgrades() []queue.Upgrade {
	return []queue.Upgrade{
		queue.RenameField("company", "company_id"),
		func(p json.RawMessage) (json.RawMessage, error) {
			var v map[string]any
			if err := json.Unmarshal(p, &v); err != nil {
				return nil, err
			}
			if v["company_id"] == nil {
				return nil, errors.New("no company_id")
			}
			v["format"] = "csv"
			return json.Marshal(v)
		},
	}
}

// exports records what the handler of Export3 was given, by job id.
type exports struct {
	mu  sync.Mutex
	got map[string]Export3
}

func (e *exports) registration() map[string]queue.Registration {
	return map[string]queue.Registration{"test.export_versions": queue.HandlerOf[Export3](queue.HandlerFunc[Export3](
		func(_ context.Context, x Export3, jc queue.JobContext) error {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.got[jc.JobID] = x
			return nil
		}))}
}

// stored puts a job into the store as an older (or newer) build would
// have: name, payload and meta as given.
func stored(t *testing.T, f fixture, name, payload, meta string) string {
	t.Helper()
	id := uuid.Must(uuid.NewV7()).String()
	j := &driver.Job{ID: id, Queue: "default", Name: name, Payload: []byte(payload), MaxAttempts: 3,
		Backoff: backoff.Exponential(time.Second, time.Minute), TimeoutMs: 60_000, AvailableAt: f.clock.Now().UnixMilli(), CreatedAt: f.clock.Now().UnixMilli()}
	if meta != "" {
		j.Meta = []byte(meta)
	}
	if _, _, err := f.store.Insert(ctx, nil, j); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestOlderPayloadsAreUpgradedBeforeTheyDecode: the golden payloads of
// each version (testdata/payloads), stored as the build of that version
// stored them (version 1 without a version, as before the type had
// steps; once under the type's old name), run on this build, each
// upgraded step by step to version 3; a dispatch stores version 3.
func TestOlderPayloadsAreUpgradedBeforeTheyDecode(t *testing.T) {
	t.Parallel()
	e := &exports{got: map[string]Export3{}}
	golden := func(v int) string {
		b, err := os.ReadFile(fmt.Sprintf("testdata/payloads/test.export_versions.v%d.json", v))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	eachWith(t, queue.Config{}, e.registration(), func(t *testing.T, f fixture) {
		want := map[string]Export3{
			stored(t, f, "test.export_versions", golden(1), ""):                                           {CompanyID: "c1", Format: "csv"},
			stored(t, f, "test.export_old", golden(1), ""):                                                {CompanyID: "c1", Format: "csv"},
			stored(t, f, "test.export_versions", golden(1), `{"payload_version": 1, "traceparent": "x"}`): {CompanyID: "c1", Format: "csv"},
			stored(t, f, "test.export_versions", golden(2), `{"payload_version": 2}`):                     {CompanyID: "c2", Format: "csv"},
			stored(t, f, "test.export_versions", golden(3), `{"payload_version": 3}`):                     {CompanyID: "c3", Format: "pdf"},
		}
		id, err := f.q.Dispatch(ctx, Export3{CompanyID: "c4", Format: "xlsx"})
		if err != nil {
			t.Fatal(err)
		}
		want[id] = Export3{CompanyID: "c4", Format: "xlsx"}
		if j, err := f.q.Inspector().Job(ctx, id); err != nil || string(j.Meta) != `{"payload_version":3}` {
			t.Fatalf("the dispatched job's meta is %s (%v); want its payload's version", j.Meta, err)
		}
		if s, err := f.q.RunPending(ctx); err != nil || s.Succeeded != len(want) {
			t.Fatalf("RunPending = %v, %v", s, err)
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		for id, w := range want {
			if got := e.got[id]; got != w {
				t.Errorf("job %s decoded as %+v; want %+v", id, got, w)
			}
		}
	})
}

// TestPayloadsThatDoNotUpgradeFail: a step's error, or a version that is
// not one, fails the job at once with an error that says so; a payload of
// a newer version than the build's snoozes, its attempt not spent, for a
// newer worker, and fails once it has snoozed queue.max_snoozes times.
func TestPayloadsThatDoNotUpgradeFail(t *testing.T) {
	t.Parallel()
	e := &exports{got: map[string]Export3{}}
	eachWith(t, queue.Config{MaxSnoozes: 2}, e.registration(), func(t *testing.T, f fixture) {
		broken := stored(t, f, "test.export_versions", `{"name": "no company"}`, `{"payload_version": 2}`)
		bad := stored(t, f, "test.export_versions", `{"company_id": "c1"}`, `{"payload_version": "three"}`)
		newer := stored(t, f, "test.export_versions", `{"company_id": "c1", "format": "csv", "locale": "de"}`, `{"payload_version": 4}`)
		s, err := f.q.RunPending(ctx)
		if err != nil || s.Failed != 2 || s.Snoozed != 1 {
			t.Fatalf("RunPending = %v, %v; want two failed, one snoozed", s, err)
		}
		errs := map[string]string{}
		for _, j := range f.failed(t) {
			errs[j.ID] = j.Error
		}
		if got := errs[broken]; got != "the payload of job test.export_versions does not decode: upgrading it from version 2 to 3: no company_id" {
			t.Errorf("the payload whose upgrade fails failed with %q", got)
		}
		if got := errs[bad]; got != "the meta of job test.export_versions holds a payload_version that is not a whole number of 1 or more" {
			t.Errorf("the job with a bad version failed with %q", got)
		}
		j, err := f.q.Inspector().Job(ctx, newer)
		if err != nil || j.State != queue.StateDelayed || j.Attempts != 0 || j.Snoozes != 1 {
			t.Fatalf("the newer payload's job is %+v (%v); want it delayed, snoozed once, no attempt spent", j, err)
		}
		const reason = "its payload is version 4, newer than version 3 this build of test.export_versions knows: left for a worker of a newer build"
		if !strings.Contains(f.logs.String(), `"reason":"`+reason+`"`) {
			t.Errorf("the snooze does not say why:\n%s", f.logs)
		}
		for range 2 {
			f.clock.Advance(queue.NewerPayloadSnooze)
			f.q.RunPending(ctx)
		}
		for _, j := range f.failed(t) {
			errs[j.ID] = j.Error
		}
		if got := errs[newer]; got != "snoozed 2 times, the most queue.max_snoozes allows: "+reason {
			t.Errorf("the newer payload failed with %q", got)
		}
		if len(e.got) != 0 {
			t.Errorf("the handler ran: %+v", e.got)
		}
	})
}

// TestAliasesAreJobNamesOfTheirOwn: a dispatch under an alias stores the
// type's name; an alias that is another type's name, or another's alias,
// is refused with both named.
func TestAliasesAreJobNamesOfTheirOwn(t *testing.T) {
	t.Parallel()
	e := &exports{got: map[string]Export3{}}
	eachWith(t, queue.Config{}, e.registration(), func(t *testing.T, f fixture) {
		id, err := f.q.Push(ctx, queue.Envelope{Name: "test.export_old", Payload: []byte(`{"company_id": "c1"}`)})
		if err != nil {
			t.Fatal(err)
		}
		if j, err := f.q.Inspector().Job(ctx, id); err != nil || j.Name != "test.export_versions" {
			t.Fatalf("the job pushed under the alias is %+v (%v); want it stored under the type's name", j, err)
		}
		err = f.q.Handle(queue.NamedHandler("test.export_old", func(context.Context, json.RawMessage, queue.JobContext) error { return nil }))
		if err == nil || !strings.HasPrefix(err.Error(), `queue: job "test.export_old" is registered twice: queue_test.Export3 (an alias of test.export_versions) at `) {
			t.Fatalf("a type named as another's alias: %v", err)
		}
	})
}

// TestStatusShowsJobsOfUnknownTypes: the waiting and delayed jobs whose
// type no handler of this build knows are counted by type (an alias is
// known), and queue:status says what to do about them.
func TestStatusShowsJobsOfUnknownTypes(t *testing.T) {
	t.Parallel()
	e := &exports{got: map[string]Export3{}}
	eachWith(t, queue.Config{}, e.registration(), func(t *testing.T, f fixture) {
		for _, name := range []string{"test.gone", "test.export_old", "test.gone", "test.export_versions", "crm.removed", "test.gone"} {
			stored(t, f, name, `{}`, "")
		}
		f.q.Dispatch(ctx, ExportContacts{CompanyID: "c1"})
		stats, err := f.q.Inspector().Stats(ctx)
		if err == nil {
			err = f.q.Inspector().UnknownTypes(ctx, stats)
		}
		if err != nil || len(stats) != 1 || !maps.Equal(stats[0].Unknown, map[string]int{"test.gone": 3, "crm.removed": 1}) {
			t.Fatalf("stats %+v (%v); want 3 test.gone and 1 crm.removed unknown", stats, err)
		}
		var out strings.Builder
		if err := queue.PrintStatus(&out, stats, false, false); err != nil {
			t.Fatal(err)
		}
		if want := "default: 4 waiting job(s) of a type no handler of this build knows: crm.removed (1), test.gone (3). A worker of this build fails them (but with queue.only_known_types): " +
			"register the type, or declare its old name an alias of the new (queue.WithAliases).\n"; !strings.HasSuffix(out.String(), want) {
			t.Fatalf("queue:status printed\n%s", out.String())
		}
	})
}

// TestAWorkerOfOnlyKnownTypesLeavesTheOthers: with OnlyKnownTypes a
// worker runs the jobs of the types it has handlers for, an alias's too,
// and leaves the others waiting, taken over ones included, where a
// worker without it fails them ("no handler").
func TestAWorkerOfOnlyKnownTypesLeavesTheOthers(t *testing.T) {
	t.Parallel()
	e := &exports{got: map[string]Export3{}}
	eachWith(t, queue.Config{}, e.registration(), func(t *testing.T, f fixture) {
		unknown := stored(t, f, "test.gone", `{}`, "")
		stored(t, f, "test.export_old", `{"company": "c1"}`, "")
		f.q.Dispatch(ctx, ExportContacts{CompanyID: "c1"})
		// One of the unknown type is held by a worker that died: taken
		// over, and given back.
		dead := stored(t, f, "test.gone", `{}`, "")
		if j, err := driver.ReserveOne(ctx, f.store, "default", f.clock.Now().UnixMilli()); err != nil || j == nil {
			t.Fatal(j, err)
		}
		f.clock.Advance(2 * time.Hour)
		s, err := f.q.Work(ctx, queue.WorkOptions{StopWhenEmpty: true, OnlyKnownTypes: true})
		if err != nil || s.Succeeded != 2 || s.Failed != 0 {
			t.Fatalf("Work of only known types = %v, %v; want the two known run", s, err)
		}
		for _, id := range []string{unknown, dead} {
			if j, err := f.q.Inspector().Job(ctx, id); err != nil || j.State != queue.StateWaiting {
				t.Fatalf("the job of an unknown type %s is %+v (%v); want it waiting", id, j, err)
			}
		}
		if s, err := f.q.RunPending(ctx); err != nil || s.Failed != 2 || s.Errors[0].Error != `no handler for job type "test.gone" in this binary` {
			t.Fatalf("RunPending without it = %v, %v; want both failed for want of a handler", s, err)
		}
	})
}
