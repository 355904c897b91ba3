package app

import (
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
	"go.uber.org/fx"
)

// Command is a command of the app's command line, such as migrate or
// queue:work. Modules add commands with [Commands].
type Command struct {
	Name        string
	Usage       string // one line for the list of commands
	ArgsUsage   string // such as "ID|all"
	Description string // longer help
	Flags       []cli.Flag
	// Action runs the command: [Uses] for a command that needs services,
	// [ActionFunc] for one that needs none.
	Action Action
}

// Action is what a [Command] runs, with the services it needs. [Uses] and
// [ActionFunc] make one; no other type can.
type Action interface {
	// bind returns the option that takes the action's services from the
	// app when it is built, and the function that runs the action on
	// them; a nil function for an action without one.
	bind() (fx.Option, func(*cli.Context) error)
}

// ActionFunc is the [Action] of a command that needs no service:
//
//	Action: app.ActionFunc(func(c *cli.Context) error { … })
//
// Running it builds nothing but the configuration, which is checked.
type ActionFunc func(c *cli.Context) error

func (f ActionFunc) bind() (fx.Option, func(*cli.Context) error) {
	if f == nil {
		return fx.Options(), nil
	}
	return fx.Options(), f
}

// Uses returns the [Action] of a command that needs services. deps is a
// service the app provides, or an fx.In struct of several, and the app
// builds it (and what it needs) only when the command runs:
//
//	Action: app.Uses(func(c *cli.Context, m *db.Migrator) error { … })
//
// A command that needs several services takes them in an fx.In struct:
//
//	type exportIn struct {
//		fx.In
//		Queue *queue.Queue
//		DB    *db.DB
//	}
//	Action: app.Uses(func(c *cli.Context, p exportIn) error { … })
func Uses[T any](fn func(c *cli.Context, deps T) error) Action { return uses[T](fn) }

type uses[T any] func(*cli.Context, T) error

func (fn uses[T]) bind() (fx.Option, func(*cli.Context) error) {
	if fn == nil {
		return fx.Options(), nil
	}
	var deps T
	return fx.Invoke(func(d T) { deps = d }), func(c *cli.Context) error { return fn(c, deps) }
}

// check reports a command without a name or an action.
func (cmd Command) check() error {
	if cmd.Name == "" {
		return errors.New("a command has no name")
	}
	if cmd.Action != nil {
		if _, run := cmd.Action.bind(); run != nil {
			return nil
		}
	}
	return fmt.Errorf("command %s has no Action", cmd.Name)
}

// Commands adds commands to the app. They are supplied as values, so the
// app lists them (for help, say) without building any service.
func Commands(cmds ...Command) fx.Option { return supplyGroup("app.commands", cmds) }

// supplyGroup adds each value to an fx value group.
func supplyGroup[T any](group string, values []T) fx.Option {
	opts := make([]fx.Option, len(values))
	for i, v := range values {
		opts[i] = fx.Supply(fx.Annotated{Group: group, Target: v})
	}
	return fx.Options(opts...)
}

// flagsFirst moves the flags of a command line's command (args[0]) ahead
// of its arguments, so "mail:preview export-ready --eml out.eml" reads
// --eml as users expect: urfave/cli stops reading flags at the first
// argument. After "--" nothing moves.
func flagsFirst(cmds []Command, args []string) []string {
	if len(args) < 2 {
		return args
	}
	takesValue := map[string]bool{}
	found := false
	for _, cmd := range cmds {
		if cmd.Name != args[0] {
			continue
		}
		found = true
		for _, f := range cmd.Flags {
			_, isBool := f.(*cli.BoolFlag)
			for _, name := range f.Names() {
				takesValue[name] = !isBool
			}
		}
	}
	if !found {
		return args
	}
	flags, rest := []string{args[0]}, []string{}
	for i := 1; i < len(args); i++ {
		arg := args[i]
		switch {
		case arg == "--":
			return append(append(append(flags, "--"), rest...), args[i+1:]...)
		case len(arg) < 2 || arg[0] != '-':
			rest = append(rest, arg)
		default:
			flags = append(flags, arg)
			name, _, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
			if !hasValue && takesValue[name] && i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
		}
	}
	return append(flags, rest...)
}
