package notify

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/navree/navree/db"
	"go.uber.org/fx"

	"github.com/navree/navree/app"
	"github.com/navree/navree/queue"
	"github.com/urfave/cli/v2"
)

// PruneJob is the job notify.prune, which the module registers: it
// deletes the notifications read more than ReadOlderThanHours ago
// ([Inbox.Prune]). Dispatch it from a schedule entry:
//
//	schedule.Cron("notify.prune", "30 3 * * *", notify.PruneJob{ReadOlderThanHours: 720})
type PruneJob struct {
	ReadOlderThanHours int `json:"read_older_than_hours"`
}

// JobName is the job's stable name.
func (PruneJob) JobName() string { return "notify.prune" }

// pruneHandler runs PruneJob; inbox is nil in an app without a database.
type pruneHandler struct{ inbox *Inbox }

type pruneIn struct {
	fx.In
	DB    *db.DB    `optional:"true"`
	Clock app.Clock `optional:"true"`
}

func newPruneHandler(p pruneIn) queue.Handler[PruneJob] {
	if p.DB == nil {
		return pruneHandler{}
	}
	return pruneHandler{NewInbox(p.DB, p.Clock)}
}

// Handle prunes; an age that is not positive, or an app without a
// database, fails the job at once.
func (h pruneHandler) Handle(ctx context.Context, j PruneJob, _ queue.JobContext) error {
	if h.inbox == nil {
		return queue.Permanent(errors.New("notify.prune: the app has no database (db.Module), so no inbox to prune"))
	}
	if j.ReadOlderThanHours <= 0 {
		return queue.Permanent(fmt.Errorf("notify.prune: read_older_than_hours is %d; want more than 0, such as 720", j.ReadOlderThanHours))
	}
	_, err := h.inbox.Prune(ctx, h.inbox.clock.Now().Add(-time.Duration(j.ReadOlderThanHours)*time.Hour))
	return err
}

func commands() []app.Command {
	return []app.Command{{
		Name:  "notify:prune",
		Usage: "Delete the notifications read more than --read-older-than ago",
		Description: "Unread notifications stay, however old. Deletes them 1,000 to a transaction. To prune on a schedule,\n" +
			"dispatch the job notify.prune from an entry: schedule.Cron(\"notify.prune\", \"30 3 * * *\", notify.PruneJob{ReadOlderThanHours: 720}).",
		Flags: []cli.Flag{&cli.DurationFlag{Name: "read-older-than", Value: 30 * 24 * time.Hour, Usage: "delete those read more than `D` ago, such as 168h"}},
		Action: app.Uses(func(c *cli.Context, p pruneIn) error { // the app may have no database: then it says so
			age := c.Duration("read-older-than")
			if age <= 0 {
				return fmt.Errorf("notify:prune: --read-older-than is %s; want more than 0, such as 720h", age)
			}
			if p.DB == nil {
				return errors.New("notify:prune: the app has no database (db.Module), so no inbox to prune")
			}
			inbox := NewInbox(p.DB, p.Clock)
			n, err := inbox.Prune(c.Context, inbox.clock.Now().Add(-age))
			if err != nil {
				return err
			}
			fmt.Fprintf(c.App.Writer, "Deleted %d notification(s) read more than %s ago.\n", n, age)
			return nil
		}),
	}}
}
