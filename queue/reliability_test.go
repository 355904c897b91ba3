package queue_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/navree/navree/queue"
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
	regs := map[string]queue.Registration{"test.verbose": queue.HandlerOf[Verbose](queue.HandlerFunc[Verbose](func(context.Context, Verbose, queue.JobContext) error {
		return errors.New(strings.Repeat("é", 20_000)) // 40 KB of two-byte runes
	}))}
	eachWith(t, queue.Config{}, regs, func(t *testing.T, f fixture) {
		f.q.Dispatch(ctx, Verbose{})
		f.runPending(t)
		failed, _ := f.q.Failed(ctx)
		if len(failed) != 1 {
			t.Fatalf("%d failed jobs", len(failed))
		}
		e := failed[0].Error
		if len(e) > queue.MaxErrorLen || !strings.HasSuffix(e, "…") || !utf8.ValidString(e) {
			t.Fatalf("stored error of %d bytes (limit %d), valid UTF-8 %v, ends %q", len(e), queue.MaxErrorLen, utf8.ValidString(e), e[len(e)-6:])
		}
	})
}
