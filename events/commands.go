package events

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/navree/navree/app"
	"github.com/navree/navree/queue"
	"github.com/urfave/cli/v2"
	"go.uber.org/fx"
)

type listIn struct {
	fx.In
	Bus       *Bus
	Inspector *queue.Inspector `optional:"true"` // names the default queue; absent with a fake dispatcher
}

func listCommand() app.Command {
	return app.Command{
		Name:  "events:list",
		Usage: "List each event and its listeners: sync or queued, and their queue",
		Action: app.Uses(func(c *cli.Context, p listIn) error {
			listeners := p.Bus.Listeners()
			if len(listeners) == 0 {
				fmt.Fprintln(c.App.Writer, "No event has a listener: register them with events.Listen, events.ListenFunc, events.Sync or events.SyncFunc.")
				return nil
			}
			slices.SortStableFunc(listeners, func(a, b Listener) int { return strings.Compare(a.Event, b.Event) })
			defaultQueue := "(default)"
			if p.Inspector != nil {
				defaultQueue = p.Inspector.DefaultQueue()
			}
			w := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "EVENT\tLISTENER\tRUNS\tQUEUE\tREGISTERED AT")
			for _, l := range listeners {
				runs, q := "sync", "-"
				switch {
				case l.Queued:
					runs, q = "queued", l.Options.Queue
					if q == "" {
						q = defaultQueue
					}
				case l.AfterCommit:
					runs = "sync, after commit"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", l.Event, l.Name, runs, q, l.Where)
			}
			return w.Flush()
		}),
	}
}
