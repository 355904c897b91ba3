package queue

import (
	"fmt"

	"github.com/navree/navree/app"
	"github.com/urfave/cli/v2"
)

// bounded checks that the int flag of c's command is within lo to hi
// when it is given; also says where the same bounds apply.
func bounded(c *cli.Context, flag string, lo, hi int, also string) error {
	if v := c.Int(flag); c.IsSet(flag) && (v < lo || v > hi) {
		return fmt.Errorf("%s: --%s must be %d to %d%s, not %d", c.Command.Name, flag, lo, hi, also, v)
	}
	return nil
}

// commands are the queue module's commands; each is written beside what
// it works with.
func commands() []app.Command {
	return []app.Command{
		monitorCommand(),
		workersCommand(),
		restartCommand(),
		jobCommand(),
		batchesCommand(),
		workflowCommand(),
		workCommand(),
		benchCommand(),
		dispatchCommand(),
		statusCommand(),
		failedCommand(),
		retryCommand(),
		pauseCommand(),
		resumeCommand(),
		cancelCommand(),
		forgetCommand(),
		pruneFailedCommand(),
		flushCommand(),
	}
}
