package queue_test

import (
	"strings"
	"testing"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/db"
	"github.com/navree/navree/queue"
)

// TestMonitorCommand: queue:monitor prints a line per queue, and logs and
// exits 1 when one has too many jobs waiting or its oldest has waited too
// long, by its flags or by queue.monitor; with no threshold it says what
// to give.
func TestMonitorCommand(t *testing.T) {
	t.Parallel()
	eachMigrated(t, func(t *testing.T, url string) {
		c := &clock{t: time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)}
		q := localQueue(t, url, c, noop[ExportContacts](), noop[SyncCalendar]())
		for range 3 {
			if _, err := q.Dispatch(ctx, ExportContacts{CompanyID: "c1"}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := q.Dispatch(ctx, SyncCalendar{UserID: "u1"}); err != nil { // on sync, which no worker takes
			t.Fatal(err)
		}
		c.Advance(10 * time.Minute)
		run := func(overrides map[string]any, args ...string) (string, error) {
			overrides["database.url"] = url
			return runApp(t, overrides, append([]string{"queue:monitor"}, args...), db.Module(), queue.Module(), app.WithClock(c))
		}
		for _, tt := range []struct {
			config  map[string]any
			args    []string
			lines   []string
			err     string
			alerted bool
		}{
			{args: []string{"--max-waiting", "5"}, lines: []string{
				"OK      default: 3 waiting, the oldest for 10m0s",
				"OK      high: nothing waiting",
				"OK      sync: 1 waiting, the oldest for 10m0s (no worker takes it)"}},
			{args: []string{"--max-waiting", "2"}, alerted: true, lines: []string{
				"BEHIND  default: 3 waiting, over 2",
				"OK      high: nothing waiting",
				"OK      sync: 1 waiting, the oldest for 10m0s (no worker takes it)"},
				err: "queue:monitor: 1 queue(s) behind: default"},
			{config: map[string]any{"queue.monitor.max_wait": "5m"}, alerted: true, lines: []string{
				"BEHIND  default: the oldest has waited 10m0s, over 5m0s",
				"OK      high: nothing waiting",
				"BEHIND  sync: the oldest has waited 10m0s, over 5m0s (no worker takes it)"},
				err: "queue:monitor: 2 queue(s) behind: default, sync"},
			{config: map[string]any{"queue.monitor.max_wait": "5m"}, args: []string{"--max-wait", "0", "--max-waiting", "1", "--queue", "high,default"}, alerted: true, lines: []string{
				"OK      high: nothing waiting",
				"BEHIND  default: 3 waiting, over 1"},
				err: "queue:monitor: 1 queue(s) behind: default"},
			{args: []string{"--max-wait", "1h", "--queue", "exports"}, lines: []string{"OK      exports: nothing waiting"}},
			{err: "queue:monitor: no threshold to check: give --max-waiting or --max-wait, or set queue.monitor.max_waiting or queue.monitor.max_wait"},
			{args: []string{"--max-waiting", "-1"}, err: "queue:monitor: --max-waiting must be 0 (no limit) or more, not -1"},
			{args: []string{"--max-waiting", "1", "--queue", "a b"}, err: `queue: invalid queue name "a b": use 1 to 100 ASCII letters, digits, '-', '_', '.' or ':'`},
			{args: []string{"--max-waiting", "1", "default"}, err: `queue:monitor takes no arguments, only flags (--queue, --max-waiting, --max-wait), not "default"`},
		} {
			if tt.config == nil {
				tt.config = map[string]any{}
			}
			out, err := run(tt.config, tt.args...)
			if (err == nil) != (tt.err == "") || (err != nil && err.Error() != tt.err) {
				t.Errorf("queue:monitor %v with %v: %v, want error %q", tt.args, tt.config, err, tt.err)
			}
			var lines []string
			logged := false
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				if strings.Contains(line, "queue behind its threshold") {
					logged = logged || strings.Contains(line, "level=ERROR") && strings.Contains(line, "queue=")
					continue
				}
				if line != "" {
					lines = append(lines, line)
				}
			}
			if strings.Join(lines, "\n") != strings.Join(tt.lines, "\n") || logged != tt.alerted {
				t.Errorf("queue:monitor %v with %v printed:\n%s\nwant:\n%s\n(logged the alert: %v)", tt.args, tt.config, out, strings.Join(tt.lines, "\n"), tt.alerted)
			}
		}
	})
}
