//go:build ignore

// Command testsummary reads `go test -json` from standard input and
// prints what `go test` prints without -json (each package's ok or FAIL
// line, and the whole output of every test that failed), then the ten
// slowest packages. With -require FILE it also checks that every test
// named in FILE (one a line) passed at the top level somewhere in the
// run. With -show NAME it prints the output of the tests of that name
// even when they pass. It exits 1 if a test or a package failed, or a required test did
// not pass.
//
//	go test -json ./... | go run .ci/testsummary.go -require names.txt
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

func main() {
	require := flag.String("require", "", "a file naming tests (one a line) that must pass")
	show := flag.String("show", "", "a test whose output to print even when it passes")
	flag.Parse()
	failed, err := summarize(os.Stdin, os.Stdout, *require, *show)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(1)
	}
	if failed {
		os.Exit(1)
	}
}

func summarize(in io.Reader, out io.Writer, requireFile, show string) (failed bool, err error) {
	outputs := map[string][]string{} // by package and test: the test's lines, until it ends
	passed := map[string]bool{}      // top-level tests that passed, by name
	type pkgTime struct {
		pkg     string
		elapsed float64
	}
	var times []pkgTime
	lines := bufio.NewScanner(in)
	lines.Buffer(make([]byte, 1<<20), 1<<26)
	for lines.Scan() {
		var e event
		if err := json.Unmarshal(lines.Bytes(), &e); err != nil {
			// go test prints build failures as plain text
			fmt.Fprintln(out, lines.Text())
			failed = true
			continue
		}
		top, _, _ := strings.Cut(e.Test, "/")
		key := e.Package + " " + top // a subtest's lines go with its test's
		switch {
		case e.Action == "build-output":
			fmt.Fprint(out, e.Output)
		case e.Action == "output" && e.Test == "":
			if !strings.HasPrefix(e.Output, "=== ") && e.Output != "PASS\n" && e.Output != "FAIL\n" {
				fmt.Fprint(out, e.Output)
			}
		case e.Action == "output":
			if !strings.HasPrefix(e.Output, "=== ") {
				outputs[key] = append(outputs[key], e.Output)
			}
		case e.Test != "" && e.Test == top && (e.Action == "pass" || e.Action == "skip"):
			if e.Action == "pass" {
				passed[e.Test] = true
			}
			if e.Test == show {
				fmt.Fprint(out, strings.Join(outputs[key], ""))
			}
			delete(outputs, key)
		case e.Test != "" && e.Test == top && e.Action == "fail":
			failed = true
			fmt.Fprint(out, strings.Join(outputs[key], ""))
			delete(outputs, key)
		case e.Test == "" && (e.Action == "pass" || e.Action == "fail"):
			if e.Action == "fail" { // a test that never ended (a panic, a timeout): what it printed
				failed = true
				for k, o := range outputs {
					if strings.HasPrefix(k, e.Package+" ") {
						fmt.Fprint(out, strings.Join(o, ""))
						delete(outputs, k)
					}
				}
			}
			times = append(times, pkgTime{e.Package, e.Elapsed})
		}
	}
	if err := lines.Err(); err != nil {
		return true, err
	}
	slices.SortFunc(times, func(a, b pkgTime) int { return cmp.Compare(b.elapsed, a.elapsed) })
	fmt.Fprintln(out, "The slowest packages:")
	for _, t := range times[:min(10, len(times))] {
		fmt.Fprintf(out, "  %6.1f s  %s\n", t.elapsed, t.pkg)
	}
	if requireFile != "" {
		names, err := os.ReadFile(requireFile)
		if err != nil {
			return true, err
		}
		n := 0
		for _, name := range strings.Fields(string(names)) {
			n++
			if !passed[name] {
				fmt.Fprintf(out, "%s is required (%s), but no test of that name passed\n", name, requireFile)
				failed = true
			}
		}
		fmt.Fprintf(out, "%d required tests named in %s\n", n, requireFile)
	}
	return failed, nil
}
