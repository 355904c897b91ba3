package queue_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/navree/navree/db"
	"github.com/navree/navree/queue"
)

// logWatch keeps what a logger writes and says when a line holding want
// has been written.
type logWatch struct {
	want string
	seen chan struct{}

	mu   sync.Mutex
	buf  strings.Builder
	once sync.Once
}

func (w *logWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

func (w *logWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func noTime(_ []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

// TestListenerWarningShowsNoPassword runs a worker on a PostgreSQL server
// that refuses connections: the warning its listener logs, with the error
// of db.Connect, names the address and not the password, whatever form
// the password takes in the URL.
func TestListenerWarningShowsNoPassword(t *testing.T) {
	t.Parallel()
	tests := []struct{ give string }{
		{"postgres://bob:S3cret@127.0.0.1:1/crm"},
		{"postgres://bob@127.0.0.1:1/crm?password=S3cret"},
		{"postgres://bob@127.0.0.1:1/crm?sslpassword=S3cret"},
		{"postgres://bob:p%40ss%3Aw%2Frd%3F%23%25@127.0.0.1:1/crm"},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			cfg := db.DefaultConfig()
			cfg.URL = tt.give
			d, err := db.Open(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			logs := &logWatch{want: "listen for dispatches", seen: make(chan struct{})}
			q, err := queue.New(queue.Params{Config: queue.DefaultConfig(), DB: d, Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{ReplaceAttr: noTime}))})
			if err != nil {
				t.Fatal(err)
			}
			ctx, stop := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := q.Work(ctx, queue.WorkOptions{})
				done <- err
			}()
			<-logs.seen
			stop()
			<-done
			var warning string
			for line := range strings.SplitSeq(logs.String(), "\n") {
				if strings.Contains(line, "listen for dispatches") {
					warning = line
					break
				}
			}
			want := `level=WARN msg="listen for dispatches; polling until it reconnects" logger=navree.job error="cannot connect to PostgreSQL at 127.0.0.1:1: connection refused (is the server running?)"`
			if warning != want {
				t.Errorf("warning:\n got %s\nwant %s", warning, want)
			}
			for _, secret := range []string{"S3cret", "p%40ss", "p@ss"} {
				if strings.Contains(logs.String(), secret) {
					t.Errorf("the log shows %q:\n%s", secret, logs.String())
				}
			}
		})
	}
}
