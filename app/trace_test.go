package app

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestTracedRequests: a request gets a server span named after its route
// (its method alone when no route took it); a 5xx sets its status to
// error, a 4xx does not.
func TestTracedRequests(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	h, err := NewHandler([]Route{
		{Pattern: "GET /contacts/{id}", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusServiceUnavailable) })},
		{Pattern: "GET /contacts", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	traced := traced(h, tp)
	for _, path := range []string{"/contacts/c1", "/contacts", "/nowhere"} {
		traced.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", path, nil))
	}
	ended := spans.Ended()
	if len(ended) != 3 {
		t.Fatalf("%d spans, want 3", len(ended))
	}
	for i, want := range []struct {
		name string
		code codes.Code
	}{{"GET /contacts/{id}", codes.Error}, {"GET /contacts", codes.Unset}, {"GET", codes.Unset}} {
		if s := ended[i]; s.Name() != want.name || s.Status().Code != want.code {
			t.Errorf("span %d: %q, status %v; want %q, %v", i, s.Name(), s.Status().Code, want.name, want.code)
		}
	}
}
