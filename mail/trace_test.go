package mail_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/navree/navree/mail"
	"github.com/navree/navree/queue"
)

// TestAQueuedMailContinuesTheTrace: a mail queued inside a span is a
// mail.send job dispatched as that span's child, sent in a span linked to
// it.
func TestAQueuedMailContinuesTheTrace(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	q, err := queue.New(queue.Params{Config: queue.Config{Driver: queue.Memory}, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	m, err := mail.New(mail.Params{Config: mail.Config{Transport: mail.Memory, From: "noreply@crm.example.com"}, Dispatcher: q})
	if err == nil {
		err = q.Handle(m.Jobs()...)
	}
	if err != nil {
		t.Fatal(err)
	}
	ctx, job := tp.Tracer("test").Start(context.Background(), "process default")
	if _, err := m.Queue(ctx, mail.Message{To: []string{"ada@example.com"}, Subject: "Your export", Text: "Here."}); err != nil {
		t.Fatal(err)
	}
	job.End()
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
	if send.Parent().SpanID() != job.SpanContext().SpanID() {
		t.Errorf("mail.send was queued under %v, not the caller's span", send.Parent())
	}
	if links := process.Links(); len(links) != 1 || links[0].SpanContext.SpanID() != send.SpanContext().SpanID() {
		t.Errorf("the sending attempt links to %v", links)
	}
}
