package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gofrs/uuid/v5"
	"github.com/urfave/cli/v2"

	"github.com/navree/navree/app"
	"github.com/navree/navree/queue/internal/driver"
)

// heartbeatEvery is how often a worker beats its heart in the registry;
// one whose last beat is older than goneAfter is gone.
const (
	heartbeatEvery = 5 * time.Second
	goneAfter      = 3 * heartbeatEvery
)

// Worker is a worker registered in the queue's store: one queue:work (a
// call of [Queue.Work]) in a process, alive or gone.
type Worker struct {
	ID          string
	Host        string
	PID         int
	Queues      []string // highest priority first
	Concurrency int      // how many jobs it runs at once
	Running     int      // jobs it ran at its last heartbeat
	// Version is the app's build: its module version, or its VCS
	// revision (and "+dirty").
	Version   string
	StartedAt time.Time // on the queue's clock
	// SinceHeartbeat is how long ago its last heartbeat was, on the clock
	// of reservations, which no step of a host's clock moves.
	SinceHeartbeat time.Duration
	// Gone says its heartbeat stopped: no heartbeat for three of its
	// periods (15 s). A worker that stops deletes its row; a gone one was
	// killed, or its host lost. Its row is deleted an hour after.
	Gone bool
}

// Workers lists the registered workers, oldest first: those at work in
// every process on the queue's store, and those gone for less than an
// hour.
func (i *Inspector) Workers(ctx context.Context) ([]Worker, error) {
	rows, now, err := i.q.store.Workers(ctx, i.q.reservedAt())
	if err != nil {
		return nil, fmt.Errorf("queue: list the workers: %w", err)
	}
	out := make([]Worker, len(rows))
	for n, r := range rows {
		since := time.Duration(max(0, now-r.HeartbeatAt)) * time.Millisecond
		out[n] = Worker{ID: r.ID, Host: r.Host, PID: r.PID, Queues: r.Queues, Concurrency: r.Concurrency, Running: r.Running,
			Version: r.Version, StartedAt: time.UnixMilli(r.StartedAt).UTC(), SinceHeartbeat: since, Gone: since > goneAfter}
	}
	return out, nil
}

// registration is the registry's row of a Work call about to start.
func (q *Queue) registration() driver.Worker {
	id, err := uuid.NewV7()
	if err != nil {
		return driver.Worker{} // not registered: the work goes on
	}
	host, _ := os.Hostname()
	return driver.Worker{ID: id.String(), Host: host, PID: os.Getpid(), Version: buildVersion(), StartedAt: q.clock.Now().UnixMilli()}
}

// buildVersion is the version of the running binary: its main module's,
// or else its VCS revision; "unknown" when the build recorded neither.
func buildVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev == "" {
		return "unknown"
	}
	return rev + dirty
}

// workersCommand is queue:workers.
func workersCommand() app.Command {
	return app.Command{
		Name:  "queue:workers",
		Usage: "List the workers at work in every process, and those gone in the last hour",
		Description: "Prints one line per queue:work: its id, host, pid, queues, jobs running of its concurrency,\n" +
			"build version, when it started (UTC) and its last heartbeat. A worker whose heartbeat stopped\n" +
			"(none for 15 s: killed, or its host lost) shows as gone; a worker that stops deletes its line.",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print it as JSON"}},
		Action: app.Uses(func(c *cli.Context, i *Inspector) error {
			workers, err := i.Workers(c.Context)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				type row struct {
					ID                string   `json:"id"`
					Host              string   `json:"host"`
					PID               int      `json:"pid"`
					Queues            []string `json:"queues"`
					Concurrency       int      `json:"concurrency"`
					Running           int      `json:"running"`
					Version           string   `json:"version"`
					StartedAt         string   `json:"started_at"`
					SinceHeartbeatSec float64  `json:"since_heartbeat_secs"`
					Gone              bool     `json:"gone"`
				}
				rows := make([]row, len(workers))
				for n, w := range workers {
					rows[n] = row{w.ID, w.Host, w.PID, w.Queues, w.Concurrency, w.Running, w.Version, w.StartedAt.Format(time.RFC3339), w.SinceHeartbeat.Seconds(), w.Gone}
				}
				return json.NewEncoder(c.App.Writer).Encode(rows)
			}
			if len(workers) == 0 {
				_, err := fmt.Fprintln(c.App.Writer, "No worker is registered: start one with queue:work.")
				return err
			}
			tw := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tHOST\tPID\tQUEUES\tRUNNING\tVERSION\tSTARTED\tLAST HEARTBEAT")
			for _, w := range workers {
				beat := w.SinceHeartbeat.Round(time.Second).String() + " ago"
				if w.Gone {
					beat = "gone: " + beat
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d/%d\t%s\t%s\t%s\n", w.ID, w.Host, w.PID, strings.Join(w.Queues, ","), w.Running, w.Concurrency,
					w.Version, w.StartedAt.Format("2006-01-02 15:04:05 UTC"), beat)
			}
			return tw.Flush()
		}),
	}
}
