package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"

	"github.com/navree/navree/cmd/navree/internal/scaffold"
	"golang.org/x/mod/modfile"
)

// asksHelp reports whether args ask navree for its help: none, --help,
// -h, help or h.
func asksHelp(args []string) bool {
	return len(args) == 0 || len(args) == 1 && slices.Contains([]string{"--help", "-help", "-h", "help", "h"}, args[0])
}

// inApp reports whether the working directory holds a Navree app: a
// go.mod that requires the framework, and is not the framework's own.
func inApp() bool {
	src, err := os.ReadFile("go.mod")
	if err != nil {
		return false
	}
	f, err := modfile.ParseLax("go.mod", src, nil)
	if err != nil || f.Module == nil || f.Module.Mod.Path == frameworkModule {
		return false
	}
	return slices.ContainsFunc(f.Require, func(r *modfile.Require) bool { return r.Mod.Path == frameworkModule })
}

// printAppCommands prints, below navree's help in an app's folder, the
// commands of the app, which navree builds and runs for any command it
// does not have itself: it builds the app as such a command does
// (buildApp), and reads them from its --help. An app that does not build
// is said so on stderr, with go build's errors; the help has succeeded
// all the same.
func printAppCommands(ctx context.Context, stdout, stderr io.Writer) error {
	var built bytes.Buffer
	bin, tmp, err := buildApp(ctx, &built)
	if tmp != "" {
		defer os.RemoveAll(tmp)
	}
	if ctx.Err() != nil {
		return err
	}
	if err != nil {
		fmt.Fprintf(stderr, "\nThe app in this folder does not build, so its commands are not listed (navree COMMAND runs one once it builds). go build said:\n%s", built.String())
		return nil
	}
	help := exec.CommandContext(ctx, bin, "--help")
	var errs bytes.Buffer
	help.Stderr = &errs
	out, err := help.Output()
	commands := scaffold.CommandsOf(string(out))
	if err != nil || commands == "" {
		fmt.Fprintf(stderr, "\nThe app in this folder lists no commands: its --help (%v) printed:\n%s%s", err, out, errs.String())
		return nil
	}
	fmt.Fprintf(stdout, "\nCOMMANDS OF THE APP IN THIS FOLDER (navree COMMAND builds and runs it):\n%s", commands)
	return nil
}
