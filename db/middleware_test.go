package db_test

import (
	"context"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
)

// TestMiddlewareCommitsBelow400 sends real HTTP requests to a handler that
// writes a note, then answers with the status the request asks for.
func TestMiddlewareCommitsBelow400(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, url string) {
		d := dbtest.Open(t, url)
		createNotes(t, d)
		hooks := 0
		handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := r.Context()
			if err := addNote(ctx, d, r.URL.Query().Get("status")); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			db.UnitOfWorkFrom(ctx).AfterCommit(func(context.Context) { hooks++ })
			if r.URL.Query().Get("panic") != "" {
				panic("handler bug")
			}
			status, _ := strconv.Atoi(r.URL.Query().Get("status"))
			w.Header().Set("X-Note", "written")
			w.WriteHeader(status)
			io.WriteString(w, "body")
		})
		logger := slog.New(slog.NewTextHandler(io.Discard, nil))
		srv := httptest.NewUnstartedServer(db.Middleware(d, logger)(handler))
		srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the panic case is expected
		srv.Start()
		defer srv.Close()
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

		tests := []struct {
			query      string
			wantStatus int
			wantStored bool
		}{
			{"status=200", 200, true},
			{"status=201", 201, true},
			{"status=302", 302, true},
			{"status=399", 399, true},
			{"status=400", 400, false},
			{"status=404", 404, false},
			{"status=500", 500, false},
			{"status=200&panic=1", 0, false},
		}
		for _, tt := range tests {
			before, hooksBefore := countNotes(t, d), hooks
			resp, err := client.Get(srv.URL + "/?" + tt.query)
			if tt.wantStatus == 0 {
				// net/http answers a panicking handler by dropping the connection.
				if err == nil {
					resp.Body.Close()
					t.Fatalf("%s: got a response from a panicking handler", tt.query)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tt.wantStatus || string(body) != "body" || resp.Header.Get("X-Note") != "written" {
					t.Fatalf("%s: got %d %q %v", tt.query, resp.StatusCode, body, resp.Header)
				}
			}
			stored := countNotes(t, d) == before+1
			if stored != tt.wantStored {
				t.Errorf("%s: stored = %v, want %v", tt.query, stored, tt.wantStored)
			}
			if ranHooks := hooks == hooksBefore+1; ranHooks != tt.wantStored {
				t.Errorf("%s: after-commit hooks ran = %v, want %v", tt.query, ranHooks, tt.wantStored)
			}
		}
	})
}
