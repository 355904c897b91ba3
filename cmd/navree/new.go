package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/navree/navree/cmd/navree/internal/scaffold"
	"github.com/urfave/cli/v2"
)

const frameworkModule = "github.com/navree/navree"

// installFromClone is the advice of a navree new that found no framework
// to build against.
const installFromClone = `Next: install navree from a clone of the framework; the apps it makes build against that clone:
  git clone https://github.com/navree/navree && cd navree
  go mod download && go install ./cmd/navree
or name a clone: navree new DIR --framework-path CLONE`

// newAction is navree new DIR: it settles which framework the app builds
// against and checks git, then writes the app, fetches its modules when
// it requires a published version, and runs git init. When a step fails
// it has written nothing, or removes what it wrote, and says what to do.
func newAction(c *cli.Context) error {
	if c.NArg() != 1 {
		return errors.New("new takes one argument, the folder to write the app into: navree new crm")
	}
	dir := c.Args().First()
	module := c.String("module")
	if module == "" {
		module = filepath.Base(filepath.Clean(dir))
	}
	fw, err := resolveFramework(c.Context, c.String("framework-path"))
	if err != nil {
		return fmt.Errorf("new: %w\nNothing was written. %s", err, installFromClone)
	}
	git := !c.Bool("no-git")
	if git {
		if _, err := exec.LookPath("git"); err != nil {
			return errors.New("new: git init needs git, which is not on the PATH: install git, or run navree new with --no-git\nNothing was written.")
		}
	}
	_, statErr := os.Stat(dir)
	existed := statErr == nil
	files, err := scaffold.New(dir, scaffold.App{Module: module, FrameworkPath: fw.clone, FrameworkVersion: fw.version})
	if err != nil {
		return err // New wrote nothing, or removed it
	}
	undo := func(err error, next string) error {
		if rerr := scaffold.RemoveNew(dir, existed); rerr != nil {
			return fmt.Errorf("%w\nRemoving what it wrote failed too (%v): remove %s by hand. Next: %s", err, rerr, dir, next)
		}
		return fmt.Errorf("%w\nNothing was written (navree new removed what it wrote). Next: %s", err, next)
	}
	if fw.clone == "" { // go.mod requires the framework alone: fetch the rest
		tidy := exec.CommandContext(c.Context, "go", "mod", "tidy")
		tidy.Dir, tidy.Stdout, tidy.Stderr = dir, c.App.ErrWriter, c.App.ErrWriter
		if err := tidy.Run(); err != nil {
			return undo(fmt.Errorf("new: go mod tidy, fetching the modules of %s %s: %v", frameworkModule, fw.version, err),
				"run navree new again once the network (or GOPROXY) reaches those modules, or build against a clone:\n  "+strings.ReplaceAll(installFromClone[len("Next: "):], "\n", "\n  "))
		}
		files = append(files, "go.sum")
	}
	if git {
		init := exec.CommandContext(c.Context, "git", "init", "--quiet")
		var out bytes.Buffer
		init.Dir, init.Stdout, init.Stderr = dir, &out, &out
		if err := init.Run(); err != nil {
			return undo(fmt.Errorf("new: git init: %v: %s", err, strings.TrimSpace(out.String())), "run navree new again once git works, or with --no-git")
		}
	}
	for _, f := range files {
		fmt.Fprintf(c.App.Writer, "  wrote %s\n", f)
	}
	against := fmt.Sprintf("%s %s", frameworkModule, fw.version)
	if fw.clone != "" {
		against = "the framework's clone " + fw.clone
	}
	if git {
		fmt.Fprintln(c.App.Writer, "  ran git init")
	}
	fmt.Fprintf(c.App.Writer, "Wrote the app %s in %s, built against %s. Next:\n  cd %s\n%s", module, dir, against, dir, nextSteps)
	return nil
}

// nextSteps are what navree new says to do next in the new app, after
// cd: run its job, then work on it with navree dev and the generators.
const nextSteps = `  go run . migrate && go run . queue:dispatch hello.greet '{"name": "Ada"}' && go run . queue:work --stop-when-empty
  navree dev                        # serve and queue:work, rebuilt and restarted as you edit
  navree make:job contacts export   # a job of your own and its test; make:module, make:listener,
                                    # make:notification, make:mail, make:migration and make:command too
`

// framework is what a new app builds against: a clone of the framework,
// or a published version.
type framework struct {
	clone   string // a folder
	version string // with clone empty
}

// resolveFramework settles the framework a new app builds against: the
// clone given with --framework-path; else the clone navree was built
// from (go install ./cmd/navree there); else the version navree was
// installed at (go install …/cmd/navree@v0.1.0); else the latest
// published version, which go mod download resolves and fetches.
func resolveFramework(ctx context.Context, flagPath string) (framework, error) {
	if flagPath != "" {
		return framework{clone: flagPath}, nil
	}
	info, ok := debug.ReadBuildInfo()
	if ok && info.Main.Path == frameworkModule && info.Main.Sum != "" { // fetched as a module: a published version
		return framework{version: info.Main.Version}, nil
	}
	if clone, ok := builtFrom(); ok {
		src, err := os.ReadFile(filepath.Join(clone, "go.mod"))
		if err != nil || !bytes.Contains(src, []byte("module "+frameworkModule+"\n")) {
			return framework{}, fmt.Errorf("navree was built from the framework's clone at %s, which holds it no more", clone)
		}
		return framework{clone: clone}, nil
	}
	latest, err := downloadLatest(ctx)
	if err != nil {
		return framework{}, fmt.Errorf("navree was not built from a clone of the framework (or was, with -trimpath), and no published version of it answers: %w", err)
	}
	return framework{version: latest}, nil
}

// builtFrom is the clone of the framework navree was built from: the
// folder two above this file, as the build recorded its path. A build
// with -trimpath recorded none.
func builtFrom() (string, bool) {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return "", false
	}
	return filepath.Dir(filepath.Dir(filepath.Dir(file))), true
}

// downloadLatest resolves the framework's latest version, and fetches it
// into the module cache.
func downloadLatest(ctx context.Context) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", frameworkModule+"@latest")
	cmd.Dir = os.TempDir() // outside any module
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var got struct{ Version, Error string }
	if jerr := json.Unmarshal(out, &got); jerr == nil && got.Error != "" {
		return "", errors.New(got.Error)
	}
	if err != nil {
		return "", fmt.Errorf("go mod download %s@latest: %v %s", frameworkModule, err, strings.TrimSpace(stderr.String()))
	}
	return got.Version, nil
}
