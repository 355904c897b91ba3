package queue_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"net/http"
	"net/http/httptest"

	"github.com/navree/navree/app"
	"github.com/navree/navree/db"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/testing/apptest"
	"go.uber.org/fx"
)

// TestTraces: with a tracer provider, a dispatch makes a producer span,
// child of the caller's, whose context travels in the job's meta; each
// attempt makes a consumer span, a root of its own linked to the
// dispatch's (a retry too, not nested in the attempt before), with the
// messaging attributes and the attempt's failure; the handler's context
// carries it, so what the handler dispatches is its child.
func TestTraces(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			d := migrated(t, b.url(t))
			spans := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
			c := &clock{t: t0}
			q, err := queue.New(queue.Params{Config: queue.Config{Driver: b.driver, Workers: 1}, DB: d, Clock: c, Logger: slog.New(slog.DiscardHandler), TracerProvider: tp})
			if err != nil {
				t.Fatal(err)
			}
			var handlerSpans []trace.SpanContext
			err = q.Handle(queue.HandlerOf[ExportContacts](queue.HandlerFunc[ExportContacts](func(ctx context.Context, j ExportContacts, jc queue.JobContext) error {
				handlerSpans = append(handlerSpans, trace.SpanContextFromContext(ctx))
				if jc.Attempt == 1 {
					return errors.New("the CSV store timed out")
				}
				_, err := q.Dispatch(ctx, SyncCalendar{UserID: "u1"}) // carried on
				return err
			})), noop[SyncCalendar]())
			if err != nil {
				t.Fatal(err)
			}

			request, requestSpan := tp.Tracer("test").Start(ctx, "GET /contacts/export")
			e, _ := queue.EnvelopeOf(ExportContacts{CompanyID: "c1"})
			e.Meta = json.RawMessage(`{"requested_by":"ada"}`)
			id, err := q.Push(request, e)
			if err != nil {
				t.Fatal(err)
			}
			requestSpan.End()
			if string(e.Meta) != `{"requested_by":"ada"}` {
				t.Errorf("the caller's envelope was changed: %s", e.Meta)
			}
			if _, err := q.RunPending(ctx); err != nil {
				t.Fatal(err)
			}
			c.Advance(time.Hour) // past the backoff
			if _, err := q.RunPending(ctx); err != nil {
				t.Fatal(err)
			}

			ended := spans.Ended()
			byName := map[string][]sdktrace.ReadOnlySpan{}
			for _, s := range ended {
				byName[s.Name()] = append(byName[s.Name()], s)
			}
			send, process := byName["send default"], byName["process default"]
			if len(send) != 1 || len(process) != 2 || len(byName["send sync"]) != 1 {
				t.Fatalf("spans: %v; want send default, two process default, send sync", names(ended))
			}
			p := send[0]
			if p.SpanKind() != trace.SpanKindProducer || p.Parent().SpanID() != requestSpan.SpanContext().SpanID() ||
				p.SpanContext().TraceID() != requestSpan.SpanContext().TraceID() {
				t.Errorf("the producer span: kind %v, parent %v; want a producer, child of the request's", p.SpanKind(), p.Parent())
			}
			wantAttrs(t, p, map[attribute.Key]string{"messaging.system": "navree", "messaging.operation.name": "send",
				"messaging.destination.name": "default", "messaging.message.id": id, "navree.job.name": "contacts.export"})
			for i, s := range process {
				if s.SpanKind() != trace.SpanKindConsumer || s.Parent().IsValid() || s.SpanContext().TraceID() == p.SpanContext().TraceID() {
					t.Errorf("attempt %d: kind %v, parent %v; want a consumer span, a root of its own", i+1, s.SpanKind(), s.Parent())
				}
				if links := s.Links(); len(links) != 1 || links[0].SpanContext.SpanID() != p.SpanContext().SpanID() {
					t.Errorf("attempt %d links to %v; want the dispatch's span alone", i+1, links)
				}
				wantAttrs(t, s, map[attribute.Key]string{"messaging.operation.name": "process", "messaging.destination.name": "default",
					"messaging.message.id": id, "navree.job.name": "contacts.export"})
				if attempt := attr(s, "navree.job.attempt"); attempt.AsInt64() != int64(i+1) {
					t.Errorf("attempt %d has navree.job.attempt %v", i+1, attempt.Emit())
				}
				if !handlerSpans[i].Equal(s.SpanContext()) {
					t.Errorf("attempt %d: the handler's context carries %v, not its span", i+1, handlerSpans[i])
				}
			}
			if st := process[0].Status(); st.Code != codes.Error || st.Description != "the CSV store timed out" {
				t.Errorf("the failed attempt's status: %+v", st)
			}
			if st := process[1].Status(); st.Code == codes.Error {
				t.Errorf("the attempt that succeeded has status %+v", st)
			}
			if child := byName["send sync"][0]; child.Parent().SpanID() != process[1].SpanContext().SpanID() {
				t.Errorf("the handler's dispatch has parent %v, not the attempt's span", child.Parent())
			}
		})
	}
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}

func attr(s sdktrace.ReadOnlySpan, key attribute.Key) attribute.Value {
	for _, kv := range s.Attributes() {
		if kv.Key == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

func wantAttrs(t *testing.T, s sdktrace.ReadOnlySpan, want map[attribute.Key]string) {
	t.Helper()
	for k, v := range want {
		if got := attr(s, k).Emit(); got != v {
			t.Errorf("span %s: %s = %q, want %q", s.Name(), k, got, v)
		}
	}
}

// TestATraceFromARequestToTheWorker: a request carrying a W3C
// traceparent gets a server span in that trace, named after its route;
// the job it dispatches is that span's child, and the worker's span links
// to the dispatch.
func TestATraceFromARequestToTheWorker(t *testing.T) {
	t.Parallel()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	var q *queue.Queue
	a := apptest.New(t, apptest.TempDatabase(), db.Module(), queue.Module(), noopModule[ExportContacts](),
		fx.Supply(fx.Annotate(tp, fx.As(new(trace.TracerProvider)))),
		app.Routes(app.Route{Pattern: "POST /contacts/{id}/export", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, err := q.Dispatch(r.Context(), ExportContacts{CompanyID: r.PathValue("id")}); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.WriteHeader(http.StatusAccepted)
		})}),
		fx.Populate(&q))
	r := httptest.NewRequest("POST", "/contacts/c1/export", nil)
	r.Header.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	w := httptest.NewRecorder()
	a.ServeHTTP(w, r)
	if w.Code != http.StatusAccepted {
		t.Fatalf("POST: %d %s", w.Code, w.Body)
	}
	if _, err := q.RunPending(ctx); err != nil {
		t.Fatal(err)
	}
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans.Ended() {
		byName[s.Name()] = s
	}
	server, send, process := byName["POST /contacts/{id}/export"], byName["send default"], byName["process default"]
	if server == nil || send == nil || process == nil {
		t.Fatalf("spans: %v; want the request's, the dispatch's and the attempt's", names(spans.Ended()))
	}
	if server.SpanKind() != trace.SpanKindServer || server.SpanContext().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" ||
		server.Parent().SpanID().String() != "00f067aa0ba902b7" {
		t.Errorf("the server span: kind %v, trace %v, parent %v; want the caller's trace", server.SpanKind(), server.SpanContext().TraceID(), server.Parent().SpanID())
	}
	wantAttrs(t, server, map[attribute.Key]string{"http.route": "/contacts/{id}/export", "http.request.method": "POST", "http.response.status_code": "202"})
	if send.Parent().SpanID() != server.SpanContext().SpanID() {
		t.Errorf("the dispatch's parent is %v, not the request's span", send.Parent())
	}
	if links := process.Links(); len(links) != 1 || links[0].SpanContext.SpanID() != send.SpanContext().SpanID() {
		t.Errorf("the attempt links to %v; want the dispatch", links)
	}
}

// noopModule registers a handler that does nothing for jobs of type T.
func noopModule[T queue.Job]() fx.Option {
	return queue.HandleFunc(func(context.Context, T, queue.JobContext) error { return nil })
}

// TestAFlowIsOneSend: a flow dispatched makes one producer span, whose
// context every step carries, released at once or later: each step's
// attempt links to it.
func TestAFlowIsOneSend(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	q, err := queue.New(queue.Params{Config: queue.Config{Driver: queue.Memory}, Logger: slog.New(slog.DiscardHandler), TracerProvider: tp})
	if err == nil {
		err = q.Handle(noop[ExportContacts]())
	}
	if err != nil {
		t.Fatal(err)
	}
	id, err := q.DispatchFlow(ctx, queue.Chain(ExportContacts{CompanyID: "c1"}, ExportContacts{CompanyID: "c2"}).Then(ExportContacts{CompanyID: "c3"}))
	if err != nil {
		t.Fatal(err)
	}
	for {
		if s, err := q.RunPending(ctx); err != nil || s.Processed == 0 {
			break
		}
	}
	byName := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range spans.Ended() {
		byName[s.Name()] = append(byName[s.Name()], s)
	}
	send, process := byName["send default"], byName["process default"]
	if len(send) != 1 || len(process) != 3 {
		t.Fatalf("spans: %v; want one send default, three process default", names(spans.Ended()))
	}
	wantAttrs(t, send[0], map[attribute.Key]string{"messaging.batch.message_count": "3"})
	if id == "" {
		t.Fatal("no flow id")
	}
	for _, s := range process {
		if links := s.Links(); len(links) != 1 || links[0].SpanContext.SpanID() != send[0].SpanContext().SpanID() {
			t.Errorf("a step's attempt links to %v; want the flow's send", links)
		}
	}
}
