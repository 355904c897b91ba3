package app

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// traced wraps h, outermost, in a server span for each request, when the
// app has a tracer provider. The span continues the W3C trace context of
// the request's headers (traceparent), and the request's context carries
// it, so what the request does (a job it dispatches, say) joins the
// caller's trace. It is named after the route that served the request:
// "GET /contacts/{id}".
func traced(h http.Handler, tp trace.TracerProvider) http.Handler {
	tracer := tp.Tracer("github.com/navree/navree/app")
	var propagator propagation.TraceContext
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path)))
		defer span.End()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		var pattern string // the route's, told by the route (routed)
		h.ServeHTTP(rec, r.WithContext(context.WithValue(ctx, routeKey{}, &pattern)))
		if pattern != "" {
			span.SetName(r.Method + " " + route(pattern))
			span.SetAttributes(attribute.String("http.route", route(pattern)))
		}
		span.SetAttributes(attribute.Int("http.response.status_code", rec.status))
		if rec.status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(rec.status))
		}
	})
}

// routeKey is the context key of where a traced request's route writes
// its pattern.
type routeKey struct{}

// routed is h, which tells a traced request the pattern of its route:
// the ServeMux sets it on the request it routes, which middleware may
// have copied on the way.
func routed(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p, ok := r.Context().Value(routeKey{}).(*string); ok {
			*p = r.Pattern
		}
		h.ServeHTTP(w, r)
	})
}

// route is a ServeMux pattern without its method: "/contacts/{id}" of
// "GET /contacts/{id}".
func route(pattern string) string {
	for i := 0; i < len(pattern); i++ {
		if pattern[i] == '/' {
			return pattern[i:]
		}
	}
	return pattern
}

// statusRecorder keeps the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if !s.wrote {
		s.status, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	s.wrote = true
	return s.ResponseWriter.Write(b)
}

// Unwrap gives http.ResponseController the writer beneath.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
