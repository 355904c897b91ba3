package queue

import (
	"context"
	"encoding/json"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/navree/navree/queue/internal/driver"
)

// tracerName is the instrumentation scope of the queue's spans.
const tracerName = "github.com/navree/navree/queue"

// tracing makes the queue's spans, when the app gives the queue a tracer
// provider ([Params.TracerProvider]): a producer span for each dispatch,
// whose context travels in the jobs' meta (W3C trace context: the keys
// traceparent and tracestate), and a consumer span for each attempt,
// linked to it. A retry is linked to the same dispatch, not nested in the
// attempt before it.
type tracing struct {
	tracer     trace.Tracer
	propagator propagation.TraceContext
}

func newTracing(tp trace.TracerProvider) *tracing {
	return &tracing{tracer: tp.Tracer(tracerName)}
}

// The attributes of the spans, after OpenTelemetry's messaging
// conventions, and the job's own.
const (
	attrSystem      = attribute.Key("messaging.system")
	attrOperation   = attribute.Key("messaging.operation.name")
	attrOpType      = attribute.Key("messaging.operation.type")
	attrDestination = attribute.Key("messaging.destination.name")
	attrMessageID   = attribute.Key("messaging.message.id")
	attrBatchCount  = attribute.Key("messaging.batch.message_count")
	attrJobName     = attribute.Key("navree.job.name")
	attrAttempt     = attribute.Key("navree.job.attempt")
)

// send starts the producer span of a dispatch of rows and writes its
// context into each row's meta.
func (t *tracing) send(ctx context.Context, rows []*driver.Job) (context.Context, trace.Span) {
	queue := rows[0].Queue
	for _, r := range rows[1:] {
		if r.Queue != queue {
			queue = ""
		}
	}
	name := "send"
	attrs := []attribute.KeyValue{attrSystem.String("navree"), attrOperation.String("send"), attrOpType.String("send")}
	if queue != "" {
		name += " " + queue
		attrs = append(attrs, attrDestination.String(queue))
	}
	if len(rows) == 1 {
		attrs = append(attrs, attrJobName.String(rows[0].Name))
	} else {
		attrs = append(attrs, attrBatchCount.Int(len(rows)))
	}
	ctx, span := t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
	carrier := propagation.MapCarrier{}
	t.propagator.Inject(ctx, carrier)
	for _, r := range rows {
		r.Meta = withCarrier(r.Meta, carrier)
	}
	return ctx, span
}

// sent ends a dispatch's span: the ids it stored, or its error.
func sent(span trace.Span, ids []string, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	} else if len(ids) == 1 {
		span.SetAttributes(attrMessageID.String(ids[0]))
	}
	span.End()
}

// withCarrier is meta with the trace context's keys set.
func withCarrier(meta json.RawMessage, carrier propagation.MapCarrier) json.RawMessage {
	if len(carrier) == 0 {
		return meta
	}
	return withFields(meta, func(fields map[string]json.RawMessage) {
		for k, v := range carrier {
			fields[k], _ = json.Marshal(v)
		}
	})
}

// withFields is meta, a JSON object, with the fields set sets; meta as
// it is when it does not read (a dispatch checks it).
func withFields(meta json.RawMessage, set func(map[string]json.RawMessage)) json.RawMessage {
	fields := map[string]json.RawMessage{}
	if len(meta) > 0 && json.Unmarshal(meta, &fields) != nil {
		return meta
	}
	set(fields)
	out, err := json.Marshal(fields)
	if err != nil {
		return meta
	}
	return out
}

// process starts the consumer span of an attempt of job, a root of its
// own linked to the dispatch's span, and returns ctx with it.
func (t *tracing) process(ctx context.Context, job *driver.Job) context.Context {
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer), trace.WithNewRoot(),
		trace.WithAttributes(attrSystem.String("navree"), attrOperation.String("process"), attrOpType.String("process"),
			attrDestination.String(job.Queue), attrMessageID.String(job.ID), attrJobName.String(job.Name), attrAttempt.Int(job.Attempts))}
	if len(job.Meta) > 0 {
		var fields map[string]any
		if json.Unmarshal(job.Meta, &fields) == nil {
			carrier := propagation.MapCarrier{}
			for _, k := range t.propagator.Fields() {
				if v, ok := fields[k].(string); ok {
					carrier[k] = v
				}
			}
			if link := trace.LinkFromContext(t.propagator.Extract(context.Background(), carrier)); link.SpanContext.IsValid() {
				opts = append(opts, trace.WithLinks(link))
			}
		}
	}
	ctx, _ = t.tracer.Start(ctx, "process "+job.Queue, opts...)
	return ctx
}

// ran ends an attempt's span, with its failure.
func (t *tracing) ran(ctx context.Context, failure string) {
	span := trace.SpanFromContext(ctx)
	if failure != "" {
		span.SetStatus(codes.Error, failure)
	}
	span.End()
}
