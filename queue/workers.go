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
	"github.com/navree/navree/queue/internal/worker"
)

// Worker is a worker registered in the queue's store: one queue:work (a
// call of [Queue.Work]) or one schedule:work in a process, alive or gone.
type Worker struct {
	ID string
	// Kind is KindWorker for a queue:work, KindScheduler for a
	// schedule:work.
	Kind        string
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
	// RescueAfter is how long after its last heartbeat it counts as gone
	// and its jobs are taken over: the queue.rescue_after it started with.
	RescueAfter time.Duration
	// Gone says its heartbeat stopped: none for its RescueAfter. A
	// worker that stops deletes its row; a gone one was killed, paused,
	// or its host lost. Its row is deleted an hour after.
	Gone bool
	// RestartAt is when a restart was requested of it (queue:restart),
	// on the queue's clock of the process that asked; zero for none. It
	// is stopping: it takes no new job.
	RestartAt time.Time
}

// The kinds of registered workers.
const (
	KindWorker    = driver.KindWorker    // a queue:work: a call of Queue.Work
	KindScheduler = driver.KindScheduler // a schedule:work
)

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
		out[n] = workerOf(r, now)
	}
	return out, nil
}

// workerOf is the registry's row r, read at now on the clock of
// reservations.
func workerOf(r driver.Worker, now int64) Worker {
	w := Worker{ID: r.ID, Kind: r.Kind, Host: r.Host, PID: r.PID, Queues: r.Queues, Concurrency: r.Concurrency, Running: r.Running,
		Version: r.Version, StartedAt: time.UnixMilli(r.StartedAt).UTC(), SinceHeartbeat: time.Duration(max(0, now-r.HeartbeatAt)) * time.Millisecond,
		RescueAfter: time.Duration(r.RescueMs) * time.Millisecond, Gone: r.Gone(now)}
	if r.RestartAt != 0 {
		w.RestartAt = time.UnixMilli(r.RestartAt).UTC()
	}
	return w
}

// Registry registers processes in the queue's registry of workers, which
// queue:workers and the dashboard list. The queue module provides it (its
// Queue); schedule:work registers with it.
type Registry interface {
	// Register registers the calling process as a worker of kind (such
	// as KindScheduler), before it returns, and beats its heart until
	// leave is called, which deletes its row. The context it returns ends
	// with ctx, or when a restart is requested of the process
	// (queue:restart), with the cause [ErrRestart]: the process then
	// finishes what it does and exits, for its process manager to start
	// the new build. It does not fail: where the registry cannot be
	// written (before migrate) it logs a warning, as queue:work does, and
	// the work goes on.
	Register(ctx context.Context, kind string) (context.Context, func())
}

// Register implements [Registry]; Work registers its calls itself.
func (q *Queue) Register(ctx context.Context, kind string) (context.Context, func()) {
	reg := q.registration()
	if reg.ID == "" || q.recorder != nil {
		return ctx, func() {}
	}
	reg.Kind = kind
	ctx, restart := context.WithCancelCause(ctx)
	stop := worker.Heartbeats{Store: q.store, Worker: reg, Every: q.heartbeatEvery, ReservedAt: q.reservedAt,
		Log: q.logger.With("logger", "navree.queue"), Restart: func() { restart(ErrRestart) }}.Start(context.WithoutCancel(ctx))
	return ctx, func() {
		stop(true)
		restart(nil)
	}
}

// registration is the registry's row of a Work call about to start.
func (q *Queue) registration() driver.Worker {
	id, err := uuid.NewV7()
	if err != nil {
		return driver.Worker{} // not registered: the work goes on
	}
	host, _ := os.Hostname()
	return driver.Worker{ID: id.String(), Host: host, PID: os.Getpid(), Version: buildVersion(), StartedAt: q.clock.Now().UnixMilli(),
		RescueMs: q.cfg.RescueAfter.Milliseconds()}
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
		Description: "Prints one line per queue:work and schedule:work: its id, host, pid, queues, jobs running of\n" +
			"its concurrency, build version, when it started (UTC) and its last heartbeat. A worker whose\n" +
			"heartbeat stopped (none for queue.rescue_after, 15 s by default: killed, paused, or its host\n" +
			"lost) shows as gone, and its running jobs are taken over; a worker that stops deletes its line.",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print it as JSON"}},
		Action: app.Uses(func(c *cli.Context, i *Inspector) error {
			workers, err := i.Workers(c.Context)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				type row struct {
					ID                string   `json:"id"`
					Kind              string   `json:"kind"`
					Host              string   `json:"host"`
					PID               int      `json:"pid"`
					Queues            []string `json:"queues"`
					Concurrency       int      `json:"concurrency"`
					Running           int      `json:"running"`
					Version           string   `json:"version"`
					StartedAt         string   `json:"started_at"`
					SinceHeartbeatSec float64  `json:"since_heartbeat_secs"`
					RescueAfterSec    float64  `json:"rescue_after_secs"`
					Gone              bool     `json:"gone"`
					RestartAt         *string  `json:"restart_at"`
				}
				rows := make([]row, len(workers))
				for n, w := range workers {
					queues := w.Queues
					if queues == nil {
						queues = []string{}
					}
					rows[n] = row{w.ID, w.Kind, w.Host, w.PID, queues, w.Concurrency, w.Running, w.Version, w.StartedAt.Format(time.RFC3339),
						w.SinceHeartbeat.Seconds(), w.RescueAfter.Seconds(), w.Gone, nil}
					if !w.RestartAt.IsZero() {
						at := w.RestartAt.Format(time.RFC3339)
						rows[n].RestartAt = &at
					}
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
				if !w.RestartAt.IsZero() {
					beat += " (restarting)"
				}
				queues, running := strings.Join(w.Queues, ","), fmt.Sprintf("%d/%d", w.Running, w.Concurrency)
				if w.Kind == KindScheduler {
					queues, running = "(schedule:work)", "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", w.ID, w.Host, w.PID, queues, running,
					w.Version, w.StartedAt.Format("2006-01-02 15:04:05 UTC"), beat)
			}
			return tw.Flush()
		}),
	}
}
