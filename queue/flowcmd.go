package queue

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/app/term"
	"github.com/navree/navree/queue/internal/worker"
	"github.com/urfave/cli/v2"
)

// batchesCommand is queue:batches.
func batchesCommand() app.Command {
	return app.Command{
		Name:  "queue:batches",
		Usage: "List the batches (or chains, or workflows), newest first, with their progress",
		Description: "Prints one line per batch: its id, name, state, how many of its jobs have ended of how many,\n" +
			"how many failed, and when it was dispatched (UTC). --kind lists chains, workflows, or all.\n" +
			"queue:workflow ID shows one, step by step.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "kind", Value: "batch", Usage: "batch, chain, workflow or all"},
			&cli.IntFlag{Name: "limit", Value: 50, Usage: "list at most this many"},
			&cli.BoolFlag{Name: "json", Usage: "print it as JSON"},
		},
		Action: app.Uses(func(c *cli.Context, i *Inspector) error {
			kind := c.String("kind")
			if kind == "all" {
				kind = ""
			}
			if err := bounded(c, "limit", 1, 1000, ""); err != nil {
				return err
			}
			flows, _, err := i.Flows(c.Context, FlowsQuery{Kind: kind, Limit: c.Int("limit")})
			if err != nil {
				return fmt.Errorf("queue:batches: --kind: %w", err)
			}
			if c.Bool("json") {
				rows := make([]flowRow, len(flows))
				for n, f := range flows {
					rows[n] = rowOf(f)
				}
				return json.NewEncoder(c.App.Writer).Encode(rows)
			}
			if len(flows) == 0 {
				what, with := kind, "queue."+title(cmp.Or(kind, "x"))
				if kind == "" {
					what, with = "chain, batch or workflow", "queue.Chain, queue.Batch or queue.Workflow"
				}
				_, err := fmt.Fprintf(c.App.Writer, "No %s is kept: dispatch one with %s (those that ended are pruned with the failed jobs).\n", what, with)
				return err
			}
			tw := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tKIND\tNAME\tSTATE\tPROGRESS\tFAILED\tDISPATCHED")
			for _, f := range flows {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", f.ID, f.Kind, cmp.Or(f.Name, "-"), paintState(c.App.Writer, f.State),
					progressBar(f), f.Failed, f.CreatedAt.UTC().Format("2006-01-02 15:04:05 UTC"))
			}
			return tw.Flush()
		}),
	}
}

// progressBar is f's progress as ten cells and a count: "[######----] 6/10".
func progressBar(f FlowInfo) string {
	cells := int(f.Done() * 10)
	return "[" + strings.Repeat("#", cells) + strings.Repeat("-", 10-cells) + "] " + strconv.Itoa(f.Total-f.Pending) + "/" + strconv.Itoa(f.Total)
}

// paintState colours a state of a flow or a step for w.
func paintState(w io.Writer, state string) string {
	switch state {
	case "succeeded":
		return term.Paint(w, term.Green, state)
	case "failed", "cancelled":
		return term.Paint(w, term.Red, state)
	}
	return state
}

// flowRow is a flow as queue:batches --json and queue:workflow --json
// print it.
type flowRow struct {
	ID         string    `json:"id"`
	Kind       string    `json:"kind"`
	Name       string    `json:"name"`
	State      string    `json:"state"`
	Total      int       `json:"total"`
	Pending    int       `json:"pending"`
	Succeeded  int       `json:"succeeded"`
	Failed     int       `json:"failed"`
	CreatedAt  string    `json:"created_at"`
	FinishedAt string    `json:"finished_at,omitempty"`
	Steps      []stepRow `json:"steps,omitempty"`
}

type stepRow struct {
	Name        string          `json:"name"`
	Role        string          `json:"role"`
	State       string          `json:"state"`
	JobID       string          `json:"job_id"`
	Job         string          `json:"job"`
	Queue       string          `json:"queue"`
	After       []string        `json:"after"`
	RunIfFailed bool            `json:"run_if_failed,omitempty"`
	Error       string          `json:"error,omitempty"`
	EndedAt     string          `json:"ended_at,omitempty"`
	Result      json.RawMessage `json:"result,omitempty"`
}

func rowOf(f FlowInfo) flowRow {
	r := flowRow{ID: f.ID, Kind: f.Kind, Name: f.Name, State: f.State, Total: f.Total, Pending: f.Pending, Succeeded: f.Succeeded,
		Failed: f.Failed, CreatedAt: f.CreatedAt.UTC().Format(time.RFC3339Nano)}
	if !f.FinishedAt.IsZero() {
		r.FinishedAt = f.FinishedAt.UTC().Format(time.RFC3339Nano)
	}
	return r
}

// workflowCommand is queue:workflow.
func workflowCommand() app.Command {
	return app.Command{
		Name:      "queue:workflow",
		Usage:     "Show a workflow, chain or batch step by step; cancel it, or retry it from its failed steps",
		ArgsUsage: "ID",
		Description: "Prints the flow's state and progress, then each step in the order added: its name, state, the\n" +
			"steps it comes after, its job and its result or error. --cancel cancels what has not run (running\n" +
			"steps are asked to stop); --retry runs it again from the steps that did not succeed.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print it as JSON"},
			&cli.BoolFlag{Name: "cancel", Usage: "cancel it"},
			&cli.BoolFlag{Name: "retry", Usage: "retry it from its failed steps"},
		},
		Action: app.Uses(func(c *cli.Context, i *Inspector) error {
			if c.NArg() != 1 {
				return fmt.Errorf("queue:workflow takes one argument, the id of a workflow, chain or batch (queue:batches --kind all lists them)")
			}
			id := c.Args().First()
			switch {
			case c.Bool("cancel") && c.Bool("retry"):
				return fmt.Errorf("queue:workflow: give --cancel or --retry, not both")
			case c.Bool("cancel"):
				did, err := i.CancelFlow(c.Context, id)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(c.App.Writer, "Cancelled %s: %d steps will not run, %d running were asked to stop.\n", id, did.Ended, did.Signalled)
				return err
			case c.Bool("retry"):
				n, err := i.RetryFlow(c.Context, id)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(c.App.Writer, "Retrying %s: %d steps put back.\n", id, n)
				return err
			}
			d, err := i.Flow(c.Context, id)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				r := rowOf(d.FlowInfo)
				for _, s := range d.Steps {
					sr := stepRow{Name: s.Name, Role: s.Role, State: s.State, JobID: s.JobID, Job: s.Job, Queue: s.Queue, After: s.After,
						RunIfFailed: s.RunIfFailed, Error: s.Error, Result: s.Result}
					if sr.After == nil {
						sr.After = []string{}
					}
					if !s.EndedAt.IsZero() {
						sr.EndedAt = s.EndedAt.UTC().Format(time.RFC3339Nano)
					}
					r.Steps = append(r.Steps, sr)
				}
				return json.NewEncoder(c.App.Writer).Encode(r)
			}
			return printFlow(c.App.Writer, d)
		}),
	}
}

// printFlow writes what queue:workflow prints of d.
func printFlow(w io.Writer, d FlowDetail) error {
	title := title(d.Kind) + " " + d.ID
	if d.Name != "" {
		title += " (" + d.Name + ")"
	}
	fmt.Fprintf(w, "%s: %s, %s, %d failed\n", title, paintState(w, d.State), progressBar(d.FlowInfo), d.Failed)
	fmt.Fprintf(w, "  Dispatched  %s\n", d.CreatedAt.UTC().Format("2006-01-02 15:04:05.000 UTC"))
	if !d.FinishedAt.IsZero() {
		fmt.Fprintf(w, "  Ended       %s\n", d.FinishedAt.UTC().Format("2006-01-02 15:04:05.000 UTC"))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tSTATE\tAFTER\tJOB\tRESULT OR ERROR")
	for _, s := range d.Steps {
		name, after := s.Name, strings.Join(s.After, ",")
		if s.Role != "step" {
			after = "(" + s.Role + ")"
		} else if s.RunIfFailed {
			after += " (even if failed)"
		}
		out := s.Error
		if s.Result != nil {
			out = worker.Cut(string(s.Result), 60)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", name, paintState(w, s.State), cmp.Or(after, "-"), s.JobID, cmp.Or(out, "-"))
	}
	return tw.Flush()
}
