package queue

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/navree/navree/app"
)

// health answers a container orchestrator's probes of a queue:work
// process (--health-addr): /livez while the process runs, /readyz once
// its worker is registered, the store having answered its last heartbeat.
type health struct {
	mu       sync.Mutex
	ready    bool
	reason   string // why it is not ready
	stopping bool   // for good: a heartbeat no longer makes it ready
	metrics  string // the path of the metrics served beside, "" for none
}

func newHealth() *health { return &health{reason: "starting: not registered yet"} }

// beat takes a heartbeat's outcome (WorkOptions.Heartbeat).
func (h *health) beat(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.stopping:
		return
	case err != nil:
		// The error is in the log; a probe's answer says no more than
		// that the store did not answer.
		h.ready, h.reason = false, "not registered: the store did not answer the last heartbeat (the worker's log says why)"
		return
	}
	h.ready, h.reason = true, ""
}

// stop marks the worker as taking no more jobs, for why.
func (h *health) stop(why string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ready, h.reason, h.stopping = false, "stopping: "+why, true
}

func (h *health) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	switch r.URL.Path {
	case "/livez":
		fmt.Fprintln(w, "ok")
	case "/readyz":
		h.mu.Lock()
		ready, reason := h.ready, h.reason
		h.mu.Unlock()
		if !ready {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, reason)
			return
		}
		fmt.Fprintln(w, "ready")
	default:
		msg := "not found: the health checks are /livez and /readyz"
		if h.metrics != "" {
			msg += ", the metrics GET " + h.metrics
		}
		http.Error(w, msg, http.StatusNotFound)
	}
}

// serveHealth serves h on addr until stop, and the app's metrics beside
// when it has them (a metrics.Handler not nil): the route serve serves,
// its access rule with it. It returns the address it listens on (addr's
// port 0 picks one).
func serveHealth(addr string, h *health, metrics app.MetricsRoute) (string, func(), error) {
	var handler http.Handler = h
	if metrics.Handler != nil {
		mux := http.NewServeMux()
		if err := handle(mux, metrics.Pattern, metrics.Handler); err != nil {
			return "", nil, err
		}
		mux.Handle("/", h)
		h.metrics = strings.TrimPrefix(metrics.Pattern, "GET ")
		handler = mux
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("queue:work: --health-addr: listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	return ln.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}, nil
}

// handle registers handler on mux at pattern, turning ServeMux's panic on
// a pattern that conflicts with the health checks' into an error.
func handle(mux *http.ServeMux, pattern string, handler http.Handler) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("queue:work: --health-addr: serve the metrics at %q (metrics.path): %v", pattern, p)
		}
	}()
	mux.Handle(pattern, handler)
	return nil
}
