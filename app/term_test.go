package app_test

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"testing"

	"github.com/navree/navree/app"
	"github.com/navree/navree/app/term"
	"github.com/navree/navree/app/term/termtest"
	"github.com/urfave/cli/v2"
)

// TestALongCommandsStatusLineStaysBelowItsLog: on a terminal, a command's
// status line (term.Progress on its ErrWriter) is drawn below the app's
// log lines, which go through the same writer: each log line clears it,
// prints, and draws it again.
func TestALongCommandsStatusLineStaysBelowItsLog(t *testing.T) {
	tty := termtest.Open(t)
	a := app.New(app.Commands(app.Command{
		Name: "contacts:import",
		Action: app.Uses(func(c *cli.Context, log *slog.Logger) error {
			progress := term.NewProgress(c.App.ErrWriter, "Importing contacts", 2)
			progress.Set(1)
			log.Info("imported a contact")
			progress.Set(2)
			progress.Done()
			fmt.Fprintln(c.App.ErrWriter, "Imported 2 contacts.")
			return nil
		}),
	}))
	a.Stderr = tty
	if err := a.Run(context.Background(), []string{"contacts:import"}); err != nil {
		t.Fatal(err)
	}
	tty.WaitFor(t, "Imported 2 contacts.\n")
	clear := regexp.QuoteMeta("\r\x1b[K")
	want := "^" + clear + `Importing contacts: 1/2 \(50%\)` +
		clear + `time=\S+ level=INFO msg="imported a contact"\n` + `Importing contacts: 1/2 \(50%\)` +
		clear + `Importing contacts: 2/2 \(100%\)` +
		clear + `Imported 2 contacts.\n$`
	if got := tty.Output(); !regexp.MustCompile(want).MatchString(got) {
		t.Errorf("the terminal showed\n%q\nwant it to match\n%q", got, want)
	}
}
