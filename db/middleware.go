package db

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
)

// errRollback makes Transaction roll back a request that answered 400 or
// above.
var errRollback = errors.New("db: response status 400 or above")

// Middleware runs each request in a unit of work of d: the request's
// context carries it, and it commits when the response status is below
// 400 and rolls back otherwise, or when the handler panics.
//
// The response is held back until the unit has committed, so a client
// never sees a success that was not stored: if the commit fails, the
// client gets 500 instead (and the error goes to logger). Handlers that
// stream a response should not run behind this middleware.
func Middleware(d *DB, logger *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			buf := &heldResponse{header: http.Header{}}
			err := d.Transaction(r.Context(), func(ctx context.Context) error {
				next.ServeHTTP(buf, r.WithContext(ctx))
				if buf.status == 0 {
					buf.status = http.StatusOK
				}
				if buf.status >= 400 {
					return errRollback
				}
				return nil
			})
			if err != nil && !errors.Is(err, errRollback) {
				logger.ErrorContext(r.Context(), "request unit of work failed", "method", r.Method, "path", r.URL.Path, "error", err)
				http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
				return
			}
			for k, v := range buf.header {
				w.Header()[k] = v
			}
			w.WriteHeader(buf.status)
			_, _ = w.Write(buf.body.Bytes())
		})
	}
}

// heldResponse records a response to send after the commit.
type heldResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (h *heldResponse) Header() http.Header { return h.header }

func (h *heldResponse) WriteHeader(status int) {
	if h.status == 0 {
		h.status = status
	}
}

func (h *heldResponse) Write(p []byte) (int, error) {
	if h.status == 0 {
		h.status = http.StatusOK
	}
	return h.body.Write(p)
}
