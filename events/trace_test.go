package events_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/navree/navree/events"
	"github.com/navree/navree/queue"
)

// TestAQueuedListenerContinuesTheTrace: an event dispatched inside a span
// queues its listener's job as that span's child, and the listener runs
// in the attempt's span, linked to the dispatch.
func TestAQueuedListenerContinuesTheTrace(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	q, err := queue.New(queue.Params{Config: queue.Config{Driver: queue.Memory}, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	var inListener trace.SpanContext
	bus, err := events.New(events.Params{Dispatcher: q, Listeners: []events.Listener{
		events.QueuedListener[ContactsExported]("crm.notify_owner", events.HandlerFunc[ContactsExported](
			func(ctx context.Context, _ ContactsExported, _ queue.JobContext) error {
				inListener = trace.SpanContextFromContext(ctx)
				return nil
			})),
	}})
	if err == nil {
		err = q.Handle(bus.Jobs()...)
	}
	if err != nil {
		t.Fatal(err)
	}
	ctx, request := tp.Tracer("test").Start(context.Background(), "POST /contacts/export")
	if err := bus.Dispatch(ctx, ContactsExported{CompanyID: "c1"}); err != nil {
		t.Fatal(err)
	}
	request.End()
	if _, err := q.RunPending(context.Background()); err != nil {
		t.Fatal(err)
	}
	var send, process sdktrace.ReadOnlySpan
	for _, s := range spans.Ended() {
		switch s.SpanKind() {
		case trace.SpanKindProducer:
			send = s
		case trace.SpanKindConsumer:
			process = s
		}
	}
	if send == nil || process == nil {
		t.Fatalf("%d spans; want a dispatch's and an attempt's", len(spans.Ended()))
	}
	if send.Parent().SpanID() != request.SpanContext().SpanID() {
		t.Errorf("the listener's job was queued under %v, not the caller's span", send.Parent())
	}
	if links := process.Links(); len(links) != 1 || links[0].SpanContext.SpanID() != send.SpanContext().SpanID() {
		t.Errorf("the attempt links to %v", links)
	}
	if !inListener.Equal(process.SpanContext()) {
		t.Errorf("the listener ran in %v, not the attempt's span", inListener)
	}
}
