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
// package run: navree in a throwaway GOBIN, and the modules it fetched
// into a module cache of the tests' own.
type installation struct {
	navree string   // the installed binary
	env    []string // the environment after it: GOBIN first on PATH, that module cache, GOPROXY=off
	skip   string   // why the tests that need it skip: no network
	err    error
}

// modCache is the tests' module cache. It lives at one path from run to
// run, as the build cache knows the packages by their folder: a cache at
// a new path would compile every module of the framework again, which
// takes minutes. Each run empties it first, so it holds only what the
// install command fetched, and locks it, so two runs take turns.
var modCache = filepath.Join(os.TempDir(), "navree-test-gomodcache")

// install runs the README's install command once: from this checkout,
// with GOBIN a folder of the package run's, the module cache modCache,
// emptied, and as its network the machine's module cache (a file:// proxy)
// and then GOPROXY, the network the README assumes.
var install = sync.OnceValue(func() installation {
	line, err := readmeInstall()
	if err != nil {
		return installation{err: err}
	}
	if err := lockModCache(); err != nil {
		return installation{err: err}
	}
	goEnv := func(name string) string {
		out, _ := exec.Command("go", "env", name).Output()
		return strings.TrimSpace(string(out))
	}
	proxy := "file://" + filepath.ToSlash(filepath.Join(goEnv("GOMODCACHE"), "cache", "download")) + "," + goEnv("GOPROXY")
	gobin := filepath.Join(pkgTmp, "bin")
	env := environ(map[string]string{"GOBIN": gobin, "PATH": gobin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"GOMODCACHE": modCache, "GOFLAGS": "-modcacherw", "GOWORK": "off"})
	clean := exec.Command("go", "clean", "-modcache")
	clean.Env = env
	if out, err := clean.CombinedOutput(); err != nil {
		return installation{err: fmt.Errorf("go clean -modcache of %s: %v\n%s", modCache, err, out)}
	}
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir, cmd.Env = repoRoot(), slices.Concat(env, []string{"GOPROXY=" + proxy})
	if out, err := cmd.CombinedOutput(); err != nil {
		if offline(out) {
			return installation{skip: fmt.Sprintf("the README's install command (%s) needs the network, or a module cache holding the framework's modules: %s", line, out)}
		}
		return installation{err: fmt.Errorf("the README's install command, %s: %v\n%s", line, err, out)}
	}
	return installation{navree: filepath.Join(gobin, "navree"), env: slices.Concat(env, []string{"GOPROXY=off"})}
})

// installed is install's result for the test t, which it skips without
// the network.
func installed(t *testing.T) installation {
	t.Helper()
	if testing.Short() {
		t.Skip("installs navree and builds apps (a minute the first time, then some seconds)")
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

// repoRoot is this checkout of the framework.
func repoRoot() string {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		panic(err)
	}
	return root
}
