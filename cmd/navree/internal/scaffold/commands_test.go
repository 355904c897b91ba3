package scaffold_test

import (
	"testing"

	"github.com/navree/navree/cmd/navree/internal/scaffold"
)

// TestCommandsOfAnAppsHelp: the commands of an app's --help are the lines
// of its COMMANDS section, grouped as they are, its help command apart.
func TestCommandsOfAnAppsHelp(t *testing.T) {
	for _, tt := range []struct{ give, want string }{
		{"NAME:\n   crm\n\nCOMMANDS:\n   migrate  Apply every pending migration\n   help, h  Shows a list of commands or help for one command\n" +
			"   queue:\n     queue:work  Run queued jobs until stopped\n\nGLOBAL OPTIONS:\n   --help, -h  show help\n",
			"   migrate  Apply every pending migration\n   queue:\n     queue:work  Run queued jobs until stopped\n"},
		{"COMMANDS:\n   migrate  Apply\n", "   migrate  Apply\n"},
		{"NAME:\n   crm\n\nGLOBAL OPTIONS:\n   --help, -h  show help\n", ""},
	} {
		if got := scaffold.CommandsOf(tt.give); got != tt.want {
			t.Errorf("CommandsOf(%q) = %q, want %q", tt.give, got, tt.want)
		}
	}
}
