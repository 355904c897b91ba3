// Command benchpairs measures the example app's queue:bench of the
// working tree against an older commit, in alternating pairs, so that a
// sum of small costs shows before it lands:
//
//	go run ./cmd/benchpairs -against ba4b1c8 -pairs 5 -- --jobs 20000 --latency 0
//
// It builds cmd/app of both (the older one from a git worktree of the
// commit), gives each a database of its own and migrates it with its own
// build (SQLite files, and with -postgres a database of each on that
// server, dropped at the end), runs one warm-up of each, then the pairs,
// the older first in odd pairs and second in even ones (on PostgreSQL
// each run after a VACUUM of its database), and prints a
// Markdown table of each figure's median and range and the median of the
// ratios pair by pair (after / before; for latencies, below 1 is better).
// Everything after -- goes to queue:bench, which is always given --json.
//
// Run it on an otherwise idle machine; it reports what it measured, not
// a verdict.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "benchpairs:", err)
		os.Exit(1)
	}
}

// options are benchpairs' flags.
type options struct {
	against  string
	pairs    int
	sqlite   bool
	postgres string // a server URL, or ""
	// afterEnv are variables (KEY=VALUE) the after build alone runs
	// with: a setting the older build does not know, such as
	// APP_QUEUE__KEEP_SUCCEEDED=0s.
	afterEnv []string
	bench    []string
}

func parse(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("benchpairs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.against, "against", "", "the older commit (any name git knows) to measure against")
	fs.IntVar(&o.pairs, "pairs", 5, "how many pairs to run, after one warm-up of each build")
	fs.BoolVar(&o.sqlite, "sqlite", true, "measure on SQLite files")
	fs.StringVar(&o.postgres, "postgres", os.Getenv("NAVREE_TEST_POSTGRES_URL"), "a PostgreSQL server URL to measure on too (a database of each build is made there and dropped); \"\" for none")
	fs.Func("after-env", "KEY=VALUE in the environment of the after build alone (repeatable): a setting the older build does not know, or APP_DATABASE__URL, the same database another way (through a pooler)", func(v string) error {
		if k, _, ok := strings.Cut(v, "="); !ok || k == "" {
			return fmt.Errorf("%q is no KEY=VALUE", v)
		}
		o.afterEnv = append(o.afterEnv, v)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.bench = fs.Args()
	switch {
	case o.against == "":
		return o, errors.New("-against is required: the commit to measure against, such as ba4b1c8 or main~3")
	case o.pairs < 1 || o.pairs > 100:
		return o, fmt.Errorf("-pairs is %d; want 1 to 100", o.pairs)
	case !o.sqlite && o.postgres == "":
		return o, errors.New("nothing to measure on: -sqlite=false and no -postgres URL")
	case slices.Contains(o.bench, "--json"):
		return o, errors.New("queue:bench is given --json already: leave it out")
	}
	return o, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parse(args, stderr)
	if err != nil {
		return err
	}
	root, err := output(ctx, "", "git", "rev-parse", "--show-toplevel")
	if err != nil {
		return fmt.Errorf("find the repository: %w", err)
	}
	commit, err := output(ctx, root, "git", "rev-parse", "--short", o.against+"^{commit}")
	if err != nil {
		return fmt.Errorf("-against %s: %w", o.against, err)
	}
	tmp, err := os.MkdirTemp("", "benchpairs-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	older := filepath.Join(tmp, "src")
	if _, err := output(ctx, root, "git", "worktree", "add", "--detach", older, commit); err != nil {
		return fmt.Errorf("check out %s: %w", commit, err)
	}
	defer output(context.WithoutCancel(ctx), root, "git", "worktree", "remove", "--force", older)
	builds := [2]build{{name: "before", src: older, bin: filepath.Join(tmp, "before")}, {name: "after", src: root, bin: filepath.Join(tmp, "after"), env: o.afterEnv}}
	for _, b := range builds {
		fmt.Fprintf(stderr, "building the %s (%s)\n", b.name, b.src)
		if _, err := output(ctx, b.src, "go", "build", "-o", b.bin, "./cmd/app"); err != nil {
			return fmt.Errorf("build the %s: %w", b.name, err)
		}
	}
	var stores []string
	if o.sqlite {
		stores = append(stores, "sqlite")
	}
	if o.postgres != "" {
		stores = append(stores, "postgres")
	}
	fmt.Fprintf(stdout, "queue:bench %s, before %s and after (the working tree%s), %d pairs\n", strings.Join(o.bench, " "), commit, with(o.afterEnv), o.pairs)
	for _, store := range stores {
		urls, drop, err := databases(ctx, store, tmp, o.postgres)
		if err != nil {
			return err
		}
		runs, err := measure(ctx, builds, urls, o, stderr)
		drop()
		if err != nil {
			return fmt.Errorf("%s: %w", store, err)
		}
		fmt.Fprintf(stdout, "\n%s\n\n%s", store, table(runs))
	}
	return nil
}

// build is one of the two builds of cmd/app, and what it runs with.
type build struct {
	name, src, bin string
	env            []string
}

// with names the variables env of the after build, for the heading.
func with(env []string) string {
	if len(env) == 0 {
		return ""
	}
	return ", with " + strings.Join(env, " ")
}

// databases returns a database URL for each build on store, and what
// drops them.
func databases(ctx context.Context, store, tmp, server string) ([2]string, func(), error) {
	if store == "sqlite" {
		return [2]string{"sqlite://" + filepath.Join(tmp, "before.db"), "sqlite://" + filepath.Join(tmp, "after.db")}, func() {}, nil
	}
	u, err := url.Parse(server)
	if err != nil {
		return [2]string{}, nil, fmt.Errorf("-postgres: not a URL")
	}
	var urls [2]string
	names := [2]string{"navree_benchpairs_before", "navree_benchpairs_after"}
	drop := func() {
		for _, n := range names {
			output(context.WithoutCancel(ctx), "", "psql", server, "-qc", "DROP DATABASE IF EXISTS "+n)
		}
	}
	drop()
	for i, n := range names {
		if _, err := output(ctx, "", "psql", server, "-qc", "CREATE DATABASE "+n); err != nil {
			return urls, drop, fmt.Errorf("make the database %s: %w", n, err)
		}
		v := *u
		v.Path = "/" + n
		urls[i] = v.String()
	}
	return urls, drop, nil
}

// result is what benchpairs reads of queue:bench --json.
type result struct {
	Dispatch struct {
		JobsPerSecond float64 `json:"jobs_per_second"`
	} `json:"dispatch"`
	Work struct {
		JobsPerSecond float64 `json:"jobs_per_second"`
	} `json:"work"`
	Latency *struct {
		P50 float64 `json:"p50_ms"`
		P99 float64 `json:"p99_ms"`
	} `json:"latency"`
}

// measure migrates each build's database, runs a warm-up of each, then
// the pairs, and returns the runs of each build (0: before, 1: after).
func measure(ctx context.Context, builds [2]build, urls [2]string, o options, stderr io.Writer) ([2][]result, error) {
	var runs [2][]result
	for i, b := range builds {
		if _, err := appOutput(ctx, b, urls[i], "migrate"); err != nil {
			return runs, fmt.Errorf("migrate the %s's database: %w", b.name, err)
		}
	}
	bench := append([]string{"queue:bench"}, o.bench...)
	bench = append(bench, "--json")
	for pair := 0; pair <= o.pairs; pair++ { // pair 0: the warm-up
		order := []int{0, 1}
		if pair%2 == 0 {
			order = []int{1, 0}
		}
		for _, i := range order {
			if err := vacuum(ctx, urls[i]); err != nil {
				return runs, err
			}
			out, err := appOutput(ctx, builds[i], urls[i], bench...)
			if err != nil {
				return runs, fmt.Errorf("queue:bench of the %s: %w", builds[i].name, err)
			}
			var r result
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				return runs, fmt.Errorf("read queue:bench --json of the %s: %w", builds[i].name, err)
			}
			if pair > 0 {
				runs[i] = append(runs[i], r)
			}
			fmt.Fprintf(stderr, "pair %d, %s: work %.0f jobs/s\n", pair, builds[i].name, r.Work.JobsPerSecond)
		}
	}
	return runs, nil
}

// vacuum vacuums the PostgreSQL database at url before a run, so that
// both builds start each run from the state autovacuum keeps a busy
// database in. An older build that leaves its dead rows (queue:bench
// vacuums its table since session 22) would otherwise run on a table
// that grows with every pair, and on statistics no production table
// has. SQLite reuses the pages of deleted rows: nothing to do.
func vacuum(ctx context.Context, url string) error {
	if !strings.HasPrefix(url, "postgres") {
		return nil
	}
	if _, err := output(ctx, "", "psql", url, "-qc", "VACUUM"); err != nil {
		return fmt.Errorf("vacuum before a run: %w", err)
	}
	return nil
}

// appOutput runs b's app with args on the database at url.
func appOutput(ctx context.Context, b build, url string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, b.bin, args...)
	cmd.Dir = filepath.Join(b.src, "cmd", "app")
	// b's own variables come last, and win: an APP_DATABASE__URL of
	// them (the same database through a pooler, say) replaces url.
	cmd.Env = append(append(os.Environ(), "APP_DATABASE__URL="+url, "APP_ROOT="+cmd.Dir), b.env...)
	return runCmd(cmd)
}

// output runs name with args in dir and returns its standard output,
// trimmed.
func output(ctx context.Context, dir, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	return runCmd(cmd)
}

func runCmd(cmd *exec.Cmd) (string, error) {
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s: %w: %s", filepath.Base(cmd.Path), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// figure is one line of the table: a name and how to read it of a run.
type figure struct {
	name string
	of   func(result) (float64, bool)
}

var figures = []figure{
	{"work, jobs/s", func(r result) (float64, bool) { return r.Work.JobsPerSecond, r.Work.JobsPerSecond > 0 }},
	{"dispatch, jobs/s", func(r result) (float64, bool) { return r.Dispatch.JobsPerSecond, r.Dispatch.JobsPerSecond > 0 }},
	{"latency p50, ms", func(r result) (float64, bool) { return latency(r, false) }},
	{"latency p99, ms", func(r result) (float64, bool) { return latency(r, true) }},
}

func latency(r result, p99 bool) (float64, bool) {
	if r.Latency == nil {
		return 0, false
	}
	if p99 {
		return r.Latency.P99, true
	}
	return r.Latency.P50, true
}

// table is the Markdown table of runs: each figure's median [range] of
// each build, and the median of the ratios pair by pair.
func table(runs [2][]result) string {
	var b strings.Builder
	b.WriteString("| | before | after | after / before, by pair |\n|---|---:|---:|---:|\n")
	for _, f := range figures {
		var before, after, ratios []float64
		for p := range min(len(runs[0]), len(runs[1])) {
			x, ok := f.of(runs[0][p])
			y, ok2 := f.of(runs[1][p])
			if !ok || !ok2 || x == 0 {
				continue
			}
			before, after, ratios = append(before, x), append(after, y), append(ratios, y/x)
		}
		if len(ratios) == 0 {
			continue
		}
		r := spread(ratios)
		fmt.Fprintf(&b, "| %s | %s | %s | %.3f [%.3f–%.3f] |\n", f.name, spread(before), spread(after), r.median, r.lo, r.hi)
	}
	return b.String()
}

// summary is a median and a range.
type summary struct{ median, lo, hi float64 }

func spread(v []float64) summary {
	s := slices.Clone(v)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return summary{m, s[0], s[len(s)-1]}
}

// String prints s as a table cell: whole numbers for rates, three
// decimals for milliseconds below 100.
func (s summary) String() string {
	format := "%.0f [%.0f–%.0f]"
	if s.hi < 100 {
		format = "%.3f [%.3f–%.3f]"
	}
	return fmt.Sprintf(format, s.median, s.lo, s.hi)
}
