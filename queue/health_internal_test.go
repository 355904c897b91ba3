package queue

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/navree/navree/app"
)

// TestHealthStates: /readyz says starting until the first heartbeat,
// ready while heartbeats succeed, not registered when one fails (without
// its error, which the log has), and stopping once stopped, whatever the
// heartbeats that follow; /livez is ok throughout.
func TestHealthStates(t *testing.T) {
	h := newHealth()
	check := func(state string, wantCode int, wantBody string) {
		t.Helper()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/readyz", nil))
		if w.Code != wantCode || w.Body.String() != wantBody {
			t.Errorf("%s: /readyz %d %q, want %d %q", state, w.Code, w.Body, wantCode, wantBody)
		}
		w = httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/livez", nil))
		if w.Code != http.StatusOK {
			t.Errorf("%s: /livez %d", state, w.Code)
		}
	}
	check("before the first heartbeat", http.StatusServiceUnavailable, "starting: not registered yet\n")
	h.beat(nil)
	check("registered", http.StatusOK, "ready\n")
	h.beat(errors.New(`dial tcp 10.0.0.5:5432: connect: connection refused (postgres://crm:hunter2@db/crm)`))
	check("a failed heartbeat", http.StatusServiceUnavailable, "not registered: the store did not answer the last heartbeat (the worker's log says why)\n")
	h.beat(nil)
	h.stop("taking no new jobs")
	check("stopping", http.StatusServiceUnavailable, "stopping: taking no new jobs\n")
	h.beat(nil)
	check("a heartbeat while stopping", http.StatusServiceUnavailable, "stopping: taking no new jobs\n")
}

// TestAMetricsPathTheHealthServerCannotServeIsAnError: a metrics route
// whose pattern http.ServeMux refuses fails queue:work with an error that
// names it and metrics.path, not a panic.
func TestAMetricsPathTheHealthServerCannotServeIsAnError(t *testing.T) {
	_, _, err := serveHealth("127.0.0.1:0", newHealth(), app.MetricsRoute{Route: app.Route{Pattern: "GET /a{b", Handler: http.NotFoundHandler()}})
	if err == nil || !strings.HasPrefix(err.Error(), `queue:work: --health-addr: serve the metrics at "GET /a{b" (metrics.path): `) {
		t.Fatalf("serveHealth = %v", err)
	}
}
