package app

import (
	"fmt"
	"reflect"

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
	// Action runs the command: a function whose first parameter is
	// *cli.Context, whose other parameters are services that fx provides
	// (fx.In structs too), and which returns an error:
	//
	//	func(c *cli.Context, m *db.Migrator) error
	//
	// Only these services are built, and only when the command runs.
	Action any
}

var (
	cliContextType = reflect.TypeFor[*cli.Context]()
	errorType      = reflect.TypeFor[error]()
)

// check reports an Action of the wrong shape.
func (cmd Command) check() error {
	t := reflect.TypeOf(cmd.Action)
	if cmd.Name == "" {
		return fmt.Errorf("a command has no name")
	}
	if t == nil || t.Kind() != reflect.Func || t.IsVariadic() || t.NumIn() < 1 || t.In(0) != cliContextType ||
		t.NumOut() != 1 || t.Out(0) != errorType {
		return fmt.Errorf("command %s: Action must be a func(*cli.Context, services...) error, not %T", cmd.Name, cmd.Action)
	}
	return nil
}

// collector returns a function for fx.Invoke that takes the services the
// Action needs, and where it stores them.
func (cmd Command) collector() (*[]reflect.Value, any) {
	t := reflect.TypeOf(cmd.Action)
	in := make([]reflect.Type, 0, t.NumIn()-1)
	for i := 1; i < t.NumIn(); i++ {
		in = append(in, t.In(i))
	}
	deps := new([]reflect.Value)
	fn := reflect.MakeFunc(reflect.FuncOf(in, nil, false), func(args []reflect.Value) []reflect.Value {
		*deps = args
		return nil
	})
	return deps, fn.Interface()
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

// call runs the Action with its services.
func (cmd Command) call(c *cli.Context, deps []reflect.Value) error {
	out := reflect.ValueOf(cmd.Action).Call(append([]reflect.Value{reflect.ValueOf(c)}, deps...))
	err, _ := out[0].Interface().(error)
	return err
}
