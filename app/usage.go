package app

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/navree/navree/config"
	"github.com/urfave/cli/v2"
)

// runLine runs the command line args on cmds, each command run by run:
// what [App.Run] and [Graph.Run] share. Before urfave/cli reads it, it
// answers --version with the version alone, and "help NAME" and a
// prefix alone ("queue") with the commands under that prefix.
func (a *App) runLine(ctx context.Context, cmds []Command, run func(*cli.Context, Command) error, args []string) error {
	if wantsVersion(args) {
		fmt.Fprintln(a.Stdout, a.Version)
		return nil
	}
	if len(args) == 2 && (args[0] == "help" || args[0] == "h") && !slices.ContainsFunc(cmds, func(c Command) bool { return c.Name == args[1] }) {
		if a.listPrefix(args[1], cmds) {
			return nil
		}
		return a.unknownCommand(args[1], cmds)
	}
	return a.cli(cmds, run).RunContext(ctx, append([]string{a.Name}, flagsFirst(cmds, args)...))
}

// wantsVersion reports whether the global flags of args (those before
// the command) ask for the version, and not for help, which wins.
func wantsVersion(args []string) bool {
	version := false
	for _, arg := range args {
		switch arg {
		case "--version", "-version", "-v", "--version=true", "-v=true":
			version = true
		case "--help", "-help", "-h", "--help=true", "-h=true":
			return false
		default:
			if !strings.HasPrefix(arg, "-") || arg == "--" {
				return version
			}
		}
	}
	return version
}

// prefixes returns the prefixes of the command names, such as "queue"
// for queue:work, each once.
func prefixes(cmds []Command) []string {
	var out []string
	for _, cmd := range cmds {
		if p, _, ok := strings.Cut(cmd.Name, ":"); ok && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// listPrefix prints the commands under prefix ("queue" or "queue:"),
// and reports false, printing nothing, when no command has it.
func (a *App) listPrefix(prefix string, cmds []Command) bool {
	prefix = strings.TrimSuffix(prefix, ":") + ":"
	var under []Command
	for _, cmd := range cmds {
		if strings.HasPrefix(cmd.Name, prefix) && len(cmd.Name) > len(prefix) {
			under = append(under, cmd)
		}
	}
	if len(under) == 0 {
		return false
	}
	slices.SortFunc(under, func(x, y Command) int { return strings.Compare(x.Name, y.Name) })
	fmt.Fprintf(a.Stdout, "The %s commands of %s:\n\n", prefix, a.Name)
	w := tabwriter.NewWriter(a.Stdout, 0, 8, 2, ' ', 0)
	for _, cmd := range under {
		fmt.Fprintf(w, "   %s\t%s\n", cmd.Name, cmd.Usage)
	}
	w.Flush()
	fmt.Fprintf(a.Stdout, "\n%s COMMAND --help gives a command's flags.\n", a.Name)
	return true
}

// unknownCommand is the error of a command line that names no command
// of the app: it names the nearest command or prefix.
func (a *App) unknownCommand(name string, cmds []Command) error {
	names := prefixes(cmds)
	for _, cmd := range cmds {
		names = append(names, cmd.Name)
	}
	msg := fmt.Sprintf("unknown command %q", name)
	if near, ok := config.Nearest(name, names); ok {
		msg += "; did you mean " + near + "?"
	}
	return fmt.Errorf("%s (%s --help lists the commands)", msg, a.Name)
}

// The errors of Go's flag package, which urfave/cli returns as they are.
var (
	undefinedFlag = regexp.MustCompile(`^flag provided but not defined: -+(.+)$`)
	invalidValue  = regexp.MustCompile(`^invalid (?:boolean )?value (".*") for (?:flag )?-+([^:]+): (.+)$`)
	missingValue  = regexp.MustCompile(`^flag needs an argument: -+(.+)$`)
)

// usageError rewrites err, a flag that the command line got wrong, in the
// words of the command line: the flag as it is written (--workers), the
// flag meant for one that does not exist, what a value must be.
func usageError(err error, flags []cli.Flag) string {
	msg := err.Error()
	if m := undefinedFlag.FindStringSubmatch(msg); m != nil {
		var names []string
		for _, f := range flags {
			names = append(names, f.Names()...)
		}
		msg = "unknown flag " + dashed(m[1])
		if near, ok := config.Nearest(m[1], names); ok {
			msg += "; did you mean " + dashed(near) + "?"
		}
		return msg
	}
	if m := missingValue.FindStringSubmatch(msg); m != nil {
		return "flag " + dashed(m[1]) + " needs a value"
	}
	if m := invalidValue.FindStringSubmatch(msg); m != nil {
		reason := m[3]
		if reason == "parse error" {
			reason = "want " + valueOf(flagNamed(m[2], flags))
		}
		return "invalid value " + m[1] + " for flag " + dashed(m[2]) + ": " + reason
	}
	return msg
}

// dashed is a flag's name as it is written: -v for a letter, --workers.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

func flagNamed(name string, flags []cli.Flag) cli.Flag {
	for _, f := range flags {
		if slices.Contains(f.Names(), name) {
			return f
		}
	}
	return nil
}

// valueOf says what a value of f is.
func valueOf(f cli.Flag) string {
	switch f.(type) {
	case *cli.IntFlag, *cli.Int64Flag, *cli.UintFlag, *cli.Uint64Flag, *cli.IntSliceFlag, *cli.Int64SliceFlag, *cli.UintSliceFlag, *cli.Uint64SliceFlag:
		return "a whole number"
	case *cli.Float64Flag, *cli.Float64SliceFlag:
		return "a number"
	case *cli.DurationFlag:
		return "a duration, such as 90s, 10m or 1h30m"
	case *cli.BoolFlag:
		return "true or false"
	}
	return "another value"
}
