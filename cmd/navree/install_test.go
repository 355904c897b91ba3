package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// installation is what the README's install command left, run once per
// package run: navree in a throwaway GOBIN, built with the machine's own
// module and build caches.
type installation struct {
	navree string   // the installed binary
	env    []string // the environment after it: GOBIN first on PATH, GOPROXY=off
	skip   string   // why the tests that need it skip: the module cache lacks the framework's modules
	err    error
}

// install runs the README's install command once, from this checkout,
// with GOBIN a folder of the package run's, offline (GOPROXY=off): the
// modules come from the machine's module cache, which the go command
// that built this test filled, and the packages from its build cache, so
// the install compiles nothing that was compiled before. Two runs at once
// share nothing but those caches, which the go command locks itself.
// That the command's go mod download fetches everything a new app needs
// is checked apart, by downloadsEnough, without compiling anything.
var install = sync.OnceValue(func() installation {
	line, err := readmeInstall()
	if err != nil {
		return installation{err: err}
	}
	gobin := filepath.Join(pkgTmp, "bin")
	env := environ(map[string]string{"GOBIN": gobin, "PATH": gobin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"GOPROXY": "off", "GOWORK": "off"})
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir, cmd.Env = repoRoot(), env
	if out, err := cmd.CombinedOutput(); err != nil {
		if offline(out) {
			return installation{skip: fmt.Sprintf("the README's install command (%s), offline, needs the framework's modules in the module cache: run go mod download once with the network: %s", line, out)}
		}
		return installation{err: fmt.Errorf("the README's install command, %s: %v\n%s", line, err, out)}
	}
	return installation{navree: filepath.Join(gobin, "navree"), env: env}
})

// installed is install's result for the test t, which it skips when the
// module cache lacks the framework's modules, and in -short runs.
func installed(t *testing.T) installation {
	t.Helper()
	if testing.Short() {
		t.Skip("installs navree and builds apps (some seconds with warm caches)")
	}
	in := install()
	if in.skip != "" {
		t.Skip(in.skip)
	}
	if in.err != nil {
		t.Fatal(in.err)
	}
	return in
}

// setenv sets the environment of in for the rest of the test, for the
// go commands navree runs in this process.
func (in installation) setenv(t *testing.T) {
	for _, kv := range in.env {
		k, v, _ := strings.Cut(kv, "=")
		if os.Getenv(k) != v {
			t.Setenv(k, v)
		}
	}
}

// downloadsEnough checks what the README promises after its install
// command, "from here on, nothing needs the network": the command's go
// mod download, run into an empty module cache of the test's own (from
// the machine's module cache, as a file:// proxy), fetches every module
// that the app at dir needs to build and test its packages. go list
// loads them all from that cache offline, compiling nothing.
func downloadsEnough(t *testing.T, dir string) {
	t.Helper()
	line, err := readmeInstall()
	if err != nil {
		t.Fatal(err)
	}
	download, _, ok := strings.Cut(line, " && ")
	if !ok || !strings.HasPrefix(download, "go mod download") {
		t.Fatalf("the README's install command %q does not start with go mod download &&: change downloadsEnough with it", line)
	}
	goEnv := func(name string) string {
		out, _ := exec.Command("go", "env", name).Output()
		return strings.TrimSpace(string(out))
	}
	proxy := "file://" + filepath.ToSlash(filepath.Join(goEnv("GOMODCACHE"), "cache", "download"))
	cache := t.TempDir()
	env := environ(map[string]string{"GOMODCACHE": cache, "GOFLAGS": "-modcacherw", "GOWORK": "off", "GOSUMDB": "off"})
	cmd := exec.Command("sh", "-c", download)
	cmd.Dir, cmd.Env = repoRoot(), slices.Concat(env, []string{"GOPROXY=" + proxy})
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s into an empty module cache, from the machine's: %v\n%s", download, err, out)
	}
	list := exec.Command("go", "list", "-deps", "-test", "./...")
	list.Dir, list.Env = dir, slices.Concat(env, []string{"GOPROXY=off"})
	if out, err := list.CombinedOutput(); err != nil {
		t.Fatalf("the app needs a module that the README's %s did not fetch (go list -deps -test ./..., offline): %v\n%s", download, err, out)
	}
}

// readmeInstall is the README's install command: the line of its "Set
// up" that installs navree.
func readmeInstall() (string, error) {
	readme, err := os.ReadFile(filepath.Join(repoRoot(), "README.md"))
	if err != nil {
		return "", err
	}
	_, setUp, _ := strings.Cut(string(readme), "\n## Set up\n")
	for _, line := range strings.Split(setUp, "\n") {
		if strings.HasPrefix(line, "    ") && strings.Contains(line, "go install ./cmd/navree") {
			return strings.TrimSpace(line), nil
		}
	}
	return "", fmt.Errorf("README.md's Set up has no line that installs navree (go install ./cmd/navree)")
}

// environ is the test's environment with vars set.
func environ(vars map[string]string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); vars[k] == "" && k != "GOPROXY" && k != "GOFLAGS" {
			env = append(env, kv)
		}
	}
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	return env
}

// offline reports whether the go command's output out says it could not
// reach the network.
func offline(out []byte) bool {
	for _, s := range []string{"dial tcp", "no such host", "network is unreachable", "connection refused", "i/o timeout", "module lookup disabled", "TLS handshake timeout"} {
		if bytes.Contains(out, []byte(s)) {
			return true
		}
	}
	return false
}

// repoRoot is this checkout of the framework: two folders above the
// one the package's tests start in, whatever folder a test moved to.
var repoRoot = sync.OnceValue(func() string {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		panic(err)
	}
	return root
})
