package main

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// binaryIn puts the example app's binary (this test binary) into dir, as
// a deploy does, and returns its path.
func binaryIn(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "app")
	if os.Link(os.Args[0], path) == nil {
		return path
	}
	src, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTheAppRootFromAnotherFolder: run from another working directory, the
// app finds its root (APP_ROOT, or the binary's folder holding config/)
// and migrates the database there; with no root it fails, saying what to
// do, and creates nothing where it runs.
func TestTheAppRootFromAnotherFolder(t *testing.T) {
	t.Parallel()
	root, elsewhere := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "config"), 0o755); err != nil {
		t.Fatal(err)
	}
	deployed := binaryIn(t, root)
	app := func(binary string, env []string, args ...string) (string, string, error) {
		cmd := exec.Command(binary, args...)
		cmd.Dir = elsewhere
		cmd.Env = append(os.Environ(), append([]string{runAppEnv + "=1", "APP_ROOT="}, env...)...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}

	// The test binary's own folder holds no config/: no root.
	stdout, stderr, err := app(os.Args[0], nil, "migrate")
	var exit *exec.ExitError
	wantErr := "app: config: no app folder: neither the working directory (" + elsewhere + ") nor the binary's folder (" + filepath.Dir(os.Args[0]) +
		") holds config/ or go.mod; run the app from its folder, or set APP_ROOT to it\n"
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || stdout != "" || stderr != wantErr {
		t.Fatalf("without a root: %v, stdout %q, stderr\n%q\nwant\n%q", err, stdout, stderr, wantErr)
	}

	// The deployed binary's folder holds config/: that is the root.
	if stdout, stderr, err = app(deployed, nil, "migrate"); err != nil || !strings.HasPrefix(stdout, "Migrated example/0001_create_visits\n") {
		t.Fatalf("the deployed binary: %v, stdout %q, stderr %q", err, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(root, "var", "app.db")); err != nil {
		t.Fatalf("no database in the app folder: %v", err)
	}
	// APP_ROOT names the same root: the same database, migrated.
	if stdout, stderr, err = app(os.Args[0], []string{"APP_ROOT=" + root}, "migrate"); err != nil || stdout != "Nothing to migrate.\n" {
		t.Fatalf("APP_ROOT: %v, stdout %q, stderr %q", err, stdout, stderr)
	}
	// The deployed binary's demo says to run its jobs with it.
	if stdout, stderr, err = app(deployed, nil, "demo"); err != nil || stdout != "Queued 7 demo jobs. Run them with: "+deployed+" queue:work --stop-when-empty\n" {
		t.Fatalf("the deployed binary's demo: %v, stdout %q, stderr %q", err, stdout, stderr)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Fatalf("the app made %v in the working directory", entries)
	}
}
