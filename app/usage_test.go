package app_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/navree/navree/app"
	"github.com/urfave/cli/v2"
)

// TestTheCommandLineSaysWhatWasMeant: --version prints the version alone,
// a misspelt flag or command gets the one meant, a bad flag value names
// the flag, the value and what it takes, and a prefix alone lists its
// commands; in a process and on a built graph alike.
func TestTheCommandLineSaysWhatWasMeant(t *testing.T) {
	noop := app.ActionFunc(func(*cli.Context) error { return nil })
	cmds := app.Commands(
		app.Command{Name: "queue:work", Usage: "Run queued jobs until stopped", Action: noop, Flags: []cli.Flag{
			&cli.IntFlag{Name: "workers"}, &cli.DurationFlag{Name: "max-time"}, &cli.BoolFlag{Name: "once"},
			&cli.StringSliceFlag{Name: "queue"},
		}},
		app.Command{Name: "queue:failed", Usage: "List the failed jobs", Action: noop},
		app.Command{Name: "contacts:export", Usage: "Export the contacts", Action: noop},
	)
	const queueList = "The queue: commands of crm:\n\n" +
		"   queue:failed  List the failed jobs\n" +
		"   queue:work    Run queued jobs until stopped\n" +
		"\ncrm COMMAND --help gives a command's flags.\n"
	tests := []struct {
		args             []string
		wantOut, wantErr string
	}{
		{args: []string{"--version"}, wantOut: "1.2.3\n"},
		{args: []string{"-v"}, wantOut: "1.2.3\n"},
		{args: []string{"queue"}, wantOut: queueList},
		{args: []string{"queue:"}, wantOut: queueList},
		{args: []string{"help", "queue"}, wantOut: queueList},
		{args: []string{"queue", "--help"}, wantOut: queueList},
		{args: []string{"qeue"}, wantErr: `unknown command "qeue"; did you mean queue? (crm --help lists the commands)`},
		{args: []string{"help", "contact"}, wantErr: `unknown command "contact"; did you mean contacts? (crm --help lists the commands)`},
		{args: []string{"queue:work", "--worker", "3"},
			wantErr: "queue:work: unknown flag --worker; did you mean --workers? (crm queue:work --help lists its flags)"},
		{args: []string{"queue:work", "-worker=3"},
			wantErr: "queue:work: unknown flag --worker; did you mean --workers? (crm queue:work --help lists its flags)"},
		{args: []string{"queue:work", "--sleep", "3"},
			wantErr: "queue:work: unknown flag --sleep (crm queue:work --help lists its flags)"},
		{args: []string{"queue:work", "--workers", "abc"},
			wantErr: `queue:work: invalid value "abc" for flag --workers: want a whole number (crm queue:work --help lists its flags)`},
		{args: []string{"queue:work", "--workers=abc"},
			wantErr: `queue:work: invalid value "abc" for flag --workers: want a whole number (crm queue:work --help lists its flags)`},
		{args: []string{"queue:work", "--max-time", "soon"},
			wantErr: `queue:work: invalid value "soon" for flag --max-time: want a duration, such as 90s, 10m or 1h30m (crm queue:work --help lists its flags)`},
		{args: []string{"queue:work", "--once=maybe"},
			wantErr: `queue:work: invalid value "maybe" for flag --once: want true or false (crm queue:work --help lists its flags)`},
		{args: []string{"queue:work", "--workers"},
			wantErr: "queue:work: flag --workers needs a value (crm queue:work --help lists its flags)"},
		{args: []string{"--verison"}, wantErr: "unknown flag --verison; did you mean --version? (crm --help lists the commands and flags)"},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		a := newApp(&out, nil, cmds)
		graph, err := a.Build()
		if err != nil {
			t.Fatal(err)
		}
		for name, run := range map[string]func(context.Context, []string) error{"Run": a.Run, "Graph.Run": graph.Run} {
			out.Reset()
			err := run(context.Background(), tt.args)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr) {
				t.Errorf("%s %q: error %v\nwant %s", name, tt.args, err, tt.wantErr)
			}
			if out.String() != tt.wantOut {
				t.Errorf("%s %q printed\n%q\nwant\n%q", name, tt.args, out.String(), tt.wantOut)
			}
		}
	}
}
