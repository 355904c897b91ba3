package notify_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/navree/navree/notify"
	"github.com/navree/navree/queue"
)

// TestANotificationContinuesTheTrace: a notification sent inside a span
// queues its delivery as that span's child, delivered in a span linked to
// it.
func TestANotificationContinuesTheTrace(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	q, err := queue.New(queue.Params{Config: queue.Config{Driver: queue.Memory}, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	g := &smsGateway{}
	n, err := notify.New(notify.Params{Dispatcher: q, Types: []notify.Type{notify.TypeOf[Reminder]()}, Channels: map[string]notify.Channel{"sms": smsChannel{g}}})
	if err == nil {
		err = q.Handle(n.Jobs()...)
	}
	if err != nil {
		t.Fatal(err)
	}
	ctx, request := tp.Tracer("test").Start(context.Background(), "POST /reminders")
	if _, err := n.Send(ctx, []notify.Notifiable{ada}, Reminder{Text: "call Grace"}); err != nil {
		t.Fatal(err)
	}
	request.End()
	if stats := run(t, q); stats.Succeeded != 1 {
		t.Fatalf("RunPending = %+v", stats)
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
		t.Errorf("the delivery was queued under %v, not the caller's span", send.Parent())
	}
	if links := process.Links(); len(links) != 1 || links[0].SpanContext.SpanID() != send.SpanContext().SpanID() {
		t.Errorf("the delivering attempt links to %v", links)
	}
}
