package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/navree/navree/config"
	"github.com/navree/navree/db/dbtest"
)

const runAppEnv = "NAVREE_EXAMPLE_APP"

// TestMain lets the tests run the example app as a real process: the test
// binary started with NAVREE_EXAMPLE_APP=1 is the app, its arguments the
// command line.
func TestMain(m *testing.M) {
	if os.Getenv(runAppEnv) != "" {
		main()
		os.Exit(0)
	}
	os.Exit(dbtest.Main(m))
}

// command returns the example app as a process in dir, its app folder, on
// the database at url ("" for the SQLite default).
func command(dir, url string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), runAppEnv+"=1", "APP_ROOT="+dir, "APP_HTTP__ADDR=127.0.0.1:0")
	if url != "" {
		cmd.Env = append(cmd.Env, "APP_DATABASE__URL="+url)
	}
	return cmd
}

func run(t *testing.T, dir, url string, args ...string) string {
	t.Helper()
	out, err := command(dir, url, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("app %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// eachDatabase runs f on the SQLite default (in a fresh working directory)
// and on a PostgreSQL schema of its own.
func eachDatabase(t *testing.T, f func(t *testing.T, dir, url string)) {
	t.Run("sqlite default", func(t *testing.T) { f(t, t.TempDir(), "") })
	t.Run("postgres", func(t *testing.T) { f(t, t.TempDir(), dbtest.PostgresURL(t)) })
}

func TestMigrateThenServe(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, dir, url string) {
		if got := run(t, dir, url, "migrate"); got != "Migrated example/0001_create_visits\nMigrated notifications/0001_create_table\nMigrated queue/0001_create_jobs\nMigrated queue/0002_create_queue_clock\nMigrated queue/0003_add_meta\nMigrated queue/0004_index_failed_queue\nMigrated queue/0005_create_queue_pauses\nMigrated queue/0006_create_queue_cancels\nMigrated queue/0007_create_queue_throughput\nMigrated queue/0008_create_queue_workers\nMigrated queue/0009_add_reserved_by\nMigrated queue/0010_create_succeeded_jobs\nMigrated queue/0011_create_queue_timings\nMigrated queue/0012_create_flows\nMigrated queue/0013_add_priority_and_snoozes\nMigrated queue/0014_add_concurrency_limits\nMigrated queue/0015_add_rate_limits\nMigrated queue/0016_add_fairness\nMigrated queue/0017_add_worker_restarts\nMigrated queue/0018_record_queue_features\nMigrated queue/0019_keep_snoozes\nMigrated queue/0020_combine_limits\nMigrated queue/0021_moves_in_the_driver\nMigrated queue/0022_index_keyed_jobs_apart\nMigrated queue/0023_controls\nMigrated queue/0024_controls_alone\nMigrated schedule/0001_create_ticks\n" {
			t.Fatalf("migrate printed %q", got)
		}
		if got := run(t, dir, url, "migrate"); got != "Nothing to migrate.\n" {
			t.Fatalf("a second migrate printed %q", got)
		}
		status := run(t, dir, url, "migrate:status")
		// Each migration applied in batch 1, in a table whose columns are
		// as wide as their longest name.
		if !regexp.MustCompile(`^SET +MIGRATION +STATUS\nexample +0001_create_visits +applied \(batch 1, `).MatchString(status) ||
			!regexp.MustCompile(`\nnotifications +0001_create_table +applied \(batch 1, `).MatchString(status) ||
			!regexp.MustCompile(`\nqueue +0001_create_jobs +applied \(batch 1, `).MatchString(status) ||
			!regexp.MustCompile(`\nqueue +0024_controls_alone +applied \(batch 1, `).MatchString(status) {
			t.Fatalf("migrate:status printed %q", status)
		}
		if url == "" {
			if _, err := os.Stat(filepath.Join(dir, "var", "app.db")); err != nil {
				t.Fatalf("the SQLite default is not var/app.db: %v", err)
			}
		}

		serve := command(dir, url, "serve")
		stdout, _ := serve.StdoutPipe()
		serve.Stderr = os.Stderr
		if err := serve.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewReader(stdout)
		first, _ := lines.ReadString('\n')
		base, ok := strings.CutPrefix(strings.TrimSuffix(first, " (Ctrl-C to stop)\n"), "Serving HTTP on ")
		if !ok {
			t.Fatalf("serve printed %q", first)
		}
		// In development, the welcome page at / links the example's pages,
		// its inbox among them, and serve prints them.
		for _, page := range []string{"/", "/dev/sign-in", "/healthz", "/mail/previews", "/notifications", "/visits"} {
			want := "  " + base + page + "\n"
			if page == "/" {
				want = "Welcome page (development): " + base + "/\n"
			}
			if line, _ := lines.ReadString('\n'); line != want {
				t.Fatalf("serve printed %q, want %q", line, want)
			}
		}
		resp, err := http.Get(base + "/")
		if err != nil {
			t.Fatal(err)
		}
		welcome, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, link := range []string{`<a href="/notifications">/notifications</a>`, `<a href="/mail/previews">/mail/previews</a>`, `<a href="/visits">/visits</a>`} {
			if resp.StatusCode != 200 || !strings.Contains(string(welcome), link) {
				t.Fatalf("GET / = %d, want a link %s:\n%s", resp.StatusCode, link, welcome)
			}
		}
		for i, want := range []string{"1 visit(s)", "2 visit(s)"} {
			resp, err := http.Get(base + "/visits")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
				t.Fatalf("visit %d: %d %q, want %q", i+1, resp.StatusCode, body, want)
			}
		}
		if err := serve.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		rest, _ := io.ReadAll(lines)
		if err := serve.Wait(); err != nil || string(rest) != "Stopped serving HTTP.\n" {
			t.Fatalf("after SIGTERM: %v, printed %q", err, rest)
		}

		if got := run(t, dir, url, "migrate:rollback"); got != "Rolled back schedule/0001_create_ticks\nRolled back queue/0024_controls_alone\nRolled back queue/0023_controls\nRolled back queue/0022_index_keyed_jobs_apart\nRolled back queue/0021_moves_in_the_driver\nRolled back queue/0020_combine_limits\nRolled back queue/0019_keep_snoozes\nRolled back queue/0018_record_queue_features\nRolled back queue/0017_add_worker_restarts\nRolled back queue/0016_add_fairness\nRolled back queue/0015_add_rate_limits\nRolled back queue/0014_add_concurrency_limits\nRolled back queue/0013_add_priority_and_snoozes\nRolled back queue/0012_create_flows\nRolled back queue/0011_create_queue_timings\nRolled back queue/0010_create_succeeded_jobs\nRolled back queue/0009_add_reserved_by\nRolled back queue/0008_create_queue_workers\nRolled back queue/0007_create_queue_throughput\nRolled back queue/0006_create_queue_cancels\nRolled back queue/0005_create_queue_pauses\nRolled back queue/0004_index_failed_queue\nRolled back queue/0003_add_meta\nRolled back queue/0002_create_queue_clock\nRolled back queue/0001_create_jobs\nRolled back notifications/0001_create_table\nRolled back example/0001_create_visits\n" {
			t.Fatalf("migrate:rollback printed %q", got)
		}
		if got := run(t, dir, url, "migrate:rollback"); got != "Nothing to roll back.\n" {
			t.Fatalf("a second migrate:rollback printed %q", got)
		}
	})
}

// TestTwoProcessesMigrateAtOnce: one applies the set, the other finds it
// applied; neither fails.
func TestTwoProcessesMigrateAtOnce(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, dir, url string) {
		var wg sync.WaitGroup
		outs := make([]string, 2)
		for i := range outs {
			wg.Go(func() {
				out, err := command(dir, url, "migrate").CombinedOutput()
				if err != nil {
					t.Errorf("migrate: %v\n%s", err, out)
				}
				outs[i] = string(out)
			})
		}
		wg.Wait()
		joined := outs[0] + outs[1]
		if strings.Count(joined, "Migrated example/0001_create_visits\nMigrated notifications/0001_create_table\nMigrated queue/0001_create_jobs\nMigrated queue/0002_create_queue_clock\nMigrated queue/0003_add_meta\nMigrated queue/0004_index_failed_queue\nMigrated queue/0005_create_queue_pauses\nMigrated queue/0006_create_queue_cancels\nMigrated queue/0007_create_queue_throughput\nMigrated queue/0008_create_queue_workers\nMigrated queue/0009_add_reserved_by\nMigrated queue/0010_create_succeeded_jobs\nMigrated queue/0011_create_queue_timings\nMigrated queue/0012_create_flows\nMigrated queue/0013_add_priority_and_snoozes\nMigrated queue/0014_add_concurrency_limits\nMigrated queue/0015_add_rate_limits\nMigrated queue/0016_add_fairness\nMigrated queue/0017_add_worker_restarts\nMigrated queue/0018_record_queue_features\nMigrated queue/0019_keep_snoozes\nMigrated queue/0020_combine_limits\nMigrated queue/0021_moves_in_the_driver\nMigrated queue/0022_index_keyed_jobs_apart\nMigrated queue/0023_controls\nMigrated queue/0024_controls_alone\nMigrated schedule/0001_create_ticks\n") != 1 || strings.Count(joined, "Nothing to migrate.\n") != 1 {
			t.Fatalf("the two processes printed %q", outs)
		}
	})
}

func TestHelpWithAnUnreachableDatabase(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--help"}, {"migrate", "--help"}, {"--version"}} {
		out := run(t, t.TempDir(), "postgres://app:hunter2@203.0.113.1:5432/crm?connect_timeout=1", args...)
		if args[0] == "--version" {
			if out != "dev\n" {
				t.Fatalf("--version printed %q, want the version alone", out)
			}
			continue
		}
		if !strings.Contains(out, "app") {
			t.Fatalf("%v printed %q", args, out)
		}
	}
}

// TestHelpCreatesNothing: listing the commands builds no module, so the
// SQLite default's folder is not made.
func TestHelpCreatesNothing(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--help"}, {"--version"}, {"demo", "--help"}} {
		dir := t.TempDir()
		out := run(t, dir, "", args...)
		if args[0] == "--help" {
			for _, cmd := range []string{"serve", "migrate", "queue:work", "queue:failed", "demo", "mail:test", "mail:preview", "events:list", "schedule:work", "schedule:list", "schedule:run"} {
				if !strings.Contains(out, "   "+cmd+" ") {
					t.Errorf("--help does not list %s:\n%s", cmd, out)
				}
			}
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Fatalf("%v made %v in the working directory", args, entries)
		}
	}
}

// TestAMisspeltFlagGetsTheNearest: the example app's own binary answers a
// misspelt flag with the one meant, exit status 1, and nothing else.
func TestAMisspeltFlagGetsTheNearest(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--verison"}, "app: unknown flag --verison; did you mean --version? (app --help lists the commands and flags)\n"},
		{[]string{"queue:work", "--stop-when-emtpy"}, "app: queue:work: unknown flag --stop-when-emtpy; did you mean --stop-when-empty? (app queue:work --help lists its flags)\n"},
	} {
		cmd := command(t.TempDir(), "", tt.args...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || stdout.String() != "" || stderr.String() != tt.want {
			t.Errorf("app %s: %v, stdout %q, stderr %q; want %q", strings.Join(tt.args, " "), err, stdout.String(), stderr.String(), tt.want)
		}
	}
}

func TestBadConfigExitsNonZero(t *testing.T) {
	t.Parallel()
	tests := []struct {
		env  string
		want string
	}{
		{"APP_DATABASE__BUSY_TIMEOUT_MS=-5", `app: config: invalid value for database.busy_timeout_ms: "-5" (from env APP_DATABASE__BUSY_TIMEOUT_MS); allowed: at least 0` + "\n"},
		{"APP_HTTP__SHUTDOWN_TIMEOUT_MS=soon", `app: config: invalid value for http.shutdown_timeout_ms: "soon" (from env APP_HTTP__SHUTDOWN_TIMEOUT_MS); allowed: a whole number` + "\n"},
		{"APP_LOG__LEVEL=verbose", `app: config: invalid value for log.level: "verbose" (from env APP_LOG__LEVEL); allowed: one of debug, info, warn, error` + "\n"},
		{"APP_LOG__FORMAT=xml", `app: config: invalid value for log.format: "xml" (from env APP_LOG__FORMAT); allowed: one of text, json` + "\n"},
		{"APP_QUEUE__DRIVER=redis", `app: config: invalid value for queue.driver: "redis" (from env APP_QUEUE__DRIVER); allowed: one of database, memory` + "\n"},
		{"APP_QUEUE__DEFAULT_QUEUE=", `app: config: invalid value for queue.default_queue: "" (from env APP_QUEUE__DEFAULT_QUEUE); allowed: a non-empty value, at most 100` + "\n"},
		{"APP_QUEUE__WORKERS=0", `app: config: invalid value for queue.workers: "0" (from env APP_QUEUE__WORKERS); allowed: at least 1, at most 10000` + "\n"},
		{"APP_QUEUE__POLL_INTERVAL_MS=fast", `app: config: invalid value for queue.poll_interval_ms: "fast" (from env APP_QUEUE__POLL_INTERVAL_MS); allowed: a whole number` + "\n"},
		{"APP_DATABASE__URL=mysql://root:hunter2@db/crm", `app: config: invalid value for database.url: "mysql://root:xxxxx@db/crm" (from env APP_DATABASE__URL); allowed: sqlite://PATH or postgres://USER@HOST:PORT/DATABASE` + "\n"},
		{"APP_DATABASE__URL=host=db user=crm password=hunter2", `app: config: invalid value for database.url: "host=db user=crm password=xxxxx" (from env APP_DATABASE__URL); allowed: sqlite://PATH or postgres://USER@HOST:PORT/DATABASE (a key=value connection string is not accepted: write it as a postgres:// URL)` + "\n"},
		{"APP_DATABASE__URL=postgres://crm:hunter2@db/crm?password=hunter2&a", `app: config: invalid value for database.url: "postgres://crm:xxxxx@db/crm?password=xxxxx"` +
			` (from env APP_DATABASE__URL); allowed: sqlite://PATH or postgres://USER@HOST:PORT/DATABASE (each query parameter must be KEY=VALUE: percent-encode & and = in a value, as %26 and %3D)` + "\n"},
		{"APP_DATABASE__SQLITE_SYNCHRONOUS=off", `app: config: invalid value for database.sqlite_synchronous: "off" (from env APP_DATABASE__SQLITE_SYNCHRONOUS); allowed: one of normal, full` + "\n"},
		{"APP_DATABASE__MAX_OPEN_CONNS=lots", `app: config: invalid value for database.max_open_conns: "lots" (from env APP_DATABASE__MAX_OPEN_CONNS); allowed: a whole number` + "\n"},
		{"APP_HTTP__ADDR=", `app: config: invalid value for http.addr: "" (from env APP_HTTP__ADDR); allowed: a non-empty value` + "\n"},
	}
	for _, tt := range tests {
		cmd := command(t.TempDir(), "", "migrate")
		cmd.Env = append(cmd.Env, tt.env)
		out, err := cmd.CombinedOutput()
		if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 {
			t.Fatalf("%s: exit %v, want status 1", tt.env, err)
		}
		if string(out) != tt.want {
			t.Errorf("%s printed\n%q\nwant\n%q", tt.env, out, tt.want)
		}
	}
}

// TestATypoFailsTheBoot: a misspelt section or key, in a file or a
// variable, stops the app with status 1 and the nearest known name on
// stderr, instead of booting on the defaults (which would migrate the
// default SQLite file).
func TestATypoFailsTheBoot(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  string // a variable
		file string // or config/app.toml
		want string
	}{
		{name: "section in a variable", env: "APP_DATABSE__URL=postgres://crm:hunter2@db/crm",
			want: "app: config: unknown section [databse] (from env APP_DATABSE__URL): did you mean [database]?\n"},
		{name: "section in the file", file: "[databse]\nurl = \"postgres://crm:hunter2@db/crm\"\n",
			want: "app: config: unknown section [databse] (from DIR/config/app.toml): did you mean [database]?\n"},
		{name: "key in a variable", env: "APP_DATABASE__URLL=postgres://crm:hunter2@db/crm",
			want: `app: config: unknown key database.urll = "postgres://crm:xxxxx@db/crm" (from env APP_DATABASE__URLL): did you mean url?` + "\n"},
		{name: "key in the file", file: "[queue]\nwokers = 8\n",
			want: `app: config: unknown key queue.wokers = "8" (from DIR/config/app.toml): did you mean workers?` + "\n"},
		{name: "section of no module", env: "APP_REDIS__URL=redis://:hunter2@cache",
			want: "app: config: unknown section [redis] (from env APP_REDIS__URL): no module of this app reads it; the sections are [dashboard], [database], [http], [log], [mail], [metrics], [queue], [schedule]\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.file != "" {
				if err := os.Mkdir(filepath.Join(dir, "config"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "config", "app.toml"), []byte(tt.file), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cmd := command(dir, "", "migrate")
			if tt.env != "" {
				cmd.Env = append(cmd.Env, tt.env)
			}
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 {
				t.Fatalf("exit %v, want status 1; printed %q %q", err, stdout.String(), stderr.String())
			}
			if want := strings.ReplaceAll(tt.want, "DIR", dir); stdout.String() != "" || stderr.String() != want {
				t.Errorf("stdout %q, stderr\n%q\nwant stderr\n%q", stdout.String(), stderr.String(), want)
			}
			if _, err := os.Stat(filepath.Join(dir, "var")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the app made var/ (%v): it opened the default database", err)
			}
		})
	}
}

// TestAppEnvNeedsItsFile: an APP_ENV without a file in config/ (a typo)
// stops the app with status 1, naming the file and the environments there
// are; an empty file lets the environment run on variables alone.
func TestAppEnvNeedsItsFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "config"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config", "app.production.toml"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := command(dir, "", "migrate")
	cmd.Env = append(cmd.Env, "APP_ENV=prodution")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 {
		t.Fatalf("APP_ENV=prodution: exit %v, want status 1; printed %q %q", err, stdout.String(), stderr.String())
	}
	want := `app: config: no file ` + filepath.Join(dir, "config", "app.prodution.toml") + ` for APP_ENV "prodution" (from env APP_ENV); the environments with a file are production` +
		" (to run an environment on variables alone, create its file empty)\n"
	if stdout.String() != "" || stderr.String() != want {
		t.Errorf("APP_ENV=prodution: stdout %q, stderr\n%q\nwant stderr\n%q", stdout.String(), stderr.String(), want)
	}

	cmd = command(dir, "", "migrate")
	cmd.Env = append(cmd.Env, "APP_ENV=production")
	if out, err := cmd.CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "Migrated ") {
		t.Fatalf("APP_ENV=production with an empty file: %v, printed %q", err, out)
	}
}

func TestUnreachablePostgresNamesTheHost(t *testing.T) {
	t.Parallel()
	cmd := command(t.TempDir(), "postgres://app:hunter2@127.0.0.1:1/crm", "migrate")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "127.0.0.1:1") || strings.Contains(string(out), "hunter2") {
		t.Fatalf("exit %v, printed %q: want a failure naming the host without the password", err, out)
	}
}

// TestDemo is the README's first command: migrate, queue the demo batch,
// work it until nothing is available, then list the failed job.
func TestDemo(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, dir, url string) {
		run(t, dir, url, "migrate")
		if got := run(t, dir, url, "demo"); got != "Queued 7 demo jobs. Run them with: go run ./cmd/app queue:work --stop-when-empty\n" {
			t.Fatalf("demo printed %q", got)
		}
		work := command(dir, url, "queue:work", "--stop-when-empty")
		var stderr strings.Builder
		work.Stderr = &stderr
		out, err := work.Output()
		if err != nil {
			t.Fatalf("queue:work: %v\n%s", err, stderr.String())
		}
		if string(out) != "Processed 13 job attempt(s): 9 succeeded, 3 released for retry, 1 failed.\n" {
			t.Fatalf("queue:work printed %q", out)
		}
		if n := strings.Count(stderr.String(), `msg="job attempt"`); n != 13 {
			t.Fatalf("%d attempt log lines, want 13:\n%s", n, stderr.String())
		}
		// The export wrote its file and notified its requester: the mail
		// delivery went to the default log transport, which logged it.
		exports, _ := filepath.Glob(filepath.Join(dir, "var", "exports", "*.csv"))
		if len(exports) != 1 {
			t.Fatalf("exports %v, want the one the demo's export wrote", exports)
		}
		if csv, _ := os.ReadFile(exports[0]); string(csv) != "name,email\nAda Lovelace,ada@example.com\nGrace Hopper,grace@example.com\n" {
			t.Fatalf("the export holds %q", csv)
		}
		if !strings.Contains(stderr.String(), `msg="mail not sent: the log transport logs it instead" logger=navree.mail recipients=1 subject="Your export is ready" bytes=`) ||
			strings.Count(stderr.String(), "name=notify.send") != 2 {
			t.Fatalf("the export's mail is not logged:\n%s", stderr.String())
		}
		// It dispatched contacts.exported: the sync listener logged it, the
		// queued one ran as a job of its own.
		if !strings.Contains(stderr.String(), `msg="contacts exported" logger=audit company=Acme rows=2 file=`+filepath.Base(exports[0])) ||
			!strings.Contains(stderr.String(), "name=events.exports.prune") {
			t.Fatalf("the export's event is not handled:\n%s", stderr.String())
		}
		listed := run(t, dir, url, "events:list")
		if !strings.Contains(listed, "contacts.exported  audit.record_export  sync    -        ") ||
			!strings.Contains(listed, "contacts.exported  exports.prune        queued  default  ") {
			t.Fatalf("events:list printed:\n%s", listed)
		}
		failed := run(t, dir, url, "queue:failed")
		if !strings.HasPrefix(failed, "ID                                    QUEUE    TYPE         ATTEMPTS  FAILED (UTC)         ERROR\n") ||
			!strings.Contains(failed, "  default  demo.broken  3         ") || !strings.HasSuffix(failed, "  smtp refused the message: mailbox unavailable\n") {
			t.Fatalf("queue:failed printed %q", failed)
		}
	})
}

// TestExportMailPreview: the export's mail renders from the app's
// embedded templates, with their layout.
func TestExportMailPreview(t *testing.T) {
	t.Parallel()
	out := run(t, t.TempDir(), "", "mail:preview", "export-ready")
	for _, want := range []string{"To:         ada@example.com\nSubject:    Your export is ready\n",
		"--- text ---\nThe export of the contacts of Acme is ready: 2 contact(s).\n\nDownload it from http://127.0.0.1:8080/exports/0190f1e2-demo.csv\n\n-- \nSent by the Navree example app.\n",
		`<p><a href="http://127.0.0.1:8080/exports/0190f1e2-demo.csv">Download contacts.csv</a></p>`} {
		if !strings.Contains(out, want) {
			t.Fatalf("mail:preview export-ready printed:\n%s\nwant it to hold:\n%s", out, want)
		}
	}
}

// TestAMissingTableSaysToMigrate: a command on a database that was never
// migrated says what to do, as the app was run (here go run ./cmd/app,
// as the test binary stands for it), not as "app migrate", which no
// shell finds.
func TestAMissingTableSaysToMigrate(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, dir, url string) {
		out, err := command(dir, url, "queue:status").CombinedOutput()
		if err == nil || !strings.HasSuffix(string(out), ` (a table is missing: run "go run ./cmd/app migrate" first)`+"\n") {
			t.Fatalf("queue:status before migrate: %v\n%s", err, out)
		}
	})
}

// TestScheduleList: the example app's nightly and frequent entries, and
// the framework's housekeeping.
func TestScheduleList(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	run(t, dir, "", "migrate")
	out := run(t, dir, "", "schedule:list")
	if !regexp.MustCompile(`^NAME +SCHEDULE +ZONE +NEXT RUN`).MatchString(out) ||
		!regexp.MustCompile(`\ndemo.greet +every 5m0s +- +\d{4}-\d\d-\d\d \d\d:\d\d:00 UTC \(in \d+[ms]\) +never +demo.welcome +\(default\)\n`).MatchString(out) ||
		!regexp.MustCompile(`\nexports.prune +0 3 \* \* \* +UTC +\d{4}-\d\d-\d\d 03:00:00 UTC \(in \S+\) +never +exports.prune +\(default\)\n`).MatchString(out) ||
		!regexp.MustCompile(`\nqueue.prune_failed +0 4 \* \* \* +UTC +\d{4}-\d\d-\d\d 04:00:00 UTC \(in \S+\) +never +queue.prune_failed +\(default\)\n`).MatchString(out) ||
		!regexp.MustCompile(`\nnotify.prune +30 4 \* \* \* +UTC +\d{4}-\d\d-\d\d 04:30:00 UTC \(in \S+\) +never +notify.prune +\(default\)\n`).MatchString(out) {
		t.Fatalf("schedule:list printed:\n%s", out)
	}
}

// TestNoSecretsInOutput runs the app's commands on PostgreSQL with a
// password in its URL (trust authentication accepts it), as the user's
// password and as the query parameters password= and sslpassword=, and a
// job whose payload holds a marker: neither appears in anything printed
// or logged.
func TestNoSecretsInOutput(t *testing.T) {
	t.Parallel()
	forms := map[string]func(u *neturl.URL){
		"userinfo": func(u *neturl.URL) { u.User = neturl.UserPassword(u.User.Username(), "hunter2-secret") },
		"password parameter": func(u *neturl.URL) {
			q := u.Query()
			q.Set("password", "hunter2-secret")
			u.RawQuery = q.Encode()
		},
		"sslpassword parameter": func(u *neturl.URL) {
			q := u.Query()
			q.Set("sslpassword", "hunter2-secret")
			u.RawQuery = q.Encode()
		},
	}
	for name, withPassword := range forms {
		if testing.Short() && name != "userinfo" {
			continue // -short: one of the forms; each runs ten processes
		}
		t.Run(name, func(t *testing.T) {
			u, err := neturl.Parse(dbtest.PostgresURL(t))
			if err != nil {
				t.Fatal(err)
			}
			withPassword(u)
			dir := t.TempDir()
			var all strings.Builder
			for _, args := range [][]string{{"migrate"}, {"migrate:status"}, {"demo"}, {"queue:work", "--stop-when-empty"},
				{"queue:failed"}, {"queue:retry", "all"}, {"queue:retry", "nope"}, {"queue:flush"}, {"queue:bench", "--jobs", "50", "--latency", "5"}} {
				out, _ := command(dir, u.String(), args...).CombinedOutput()
				all.Write(out)
			}
			// A connection that fails names the host, not the password.
			bad := *u
			bad.Host = "127.0.0.1:1"
			out, _ := command(dir, bad.String(), "migrate").CombinedOutput()
			all.Write(out)
			if !strings.Contains(all.String(), "Processed") || !strings.Contains(all.String(), "127.0.0.1:1") {
				t.Fatalf("the commands did not run as expected:\n%s", all.String())
			}
			if strings.Contains(all.String(), "hunter2-secret") {
				t.Fatalf("the password was printed:\n%s", all.String())
			}
		})
	}
}

// TestReadOnlyDatabaseFile: a SQLite file that cannot be written (made
// immutable, which binds root too) fails the command with a clear error
// and leaves the file as it was.
func TestReadOnlyDatabaseFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	run(t, dir, "", "migrate")
	run(t, dir, "", "demo")
	path := filepath.Join(dir, "var", "app.db")
	// Fold the WAL into the file, so the immutable file is the whole database.
	run(t, dir, "", "queue:failed")
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		if _, err := os.Stat(f); err == nil {
			if out, err := exec.Command("chattr", "+i", f).CombinedOutput(); err != nil {
				t.Skipf("cannot make the file immutable here: %v %s", err, out)
			}
			t.Cleanup(func() { exec.Command("chattr", "-i", f).Run() })
		}
	}
	before, _ := os.ReadFile(path)
	out, err := command(dir, "", "demo").CombinedOutput()
	if err == nil {
		t.Fatalf("demo succeeded on a read-only database:\n%s", out)
	}
	if !strings.Contains(string(out), "app: ") || !(strings.Contains(string(out), "readonly") || strings.Contains(string(out), "read-only") ||
		strings.Contains(string(out), "permission") || strings.Contains(string(out), "not permitted") || strings.Contains(string(out), "unable to open")) {
		t.Fatalf("the error does not say why:\n%s", out)
	}
	after, _ := os.ReadFile(path)
	if string(before) != string(after) {
		t.Fatal("the read-only file changed")
	}
}

// TestAStopSignalWhileStartingEndsLikeTheSignal: SIGTERM while the app
// starts (here it waits for a database that accepts the connection and
// never answers) ends the process by SIGTERM, as a process manager expects
// of a stop, not with "context canceled" and status 1.
func TestAStopSignalWhileStartingEndsLikeTheSignal(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cmd := command(t.TempDir(), "postgres://postgres@"+l.Addr().String()+"/test?sslmode=disable", "queue:work")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	conn, err := l.Accept() // the app is starting: it pings the database
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cmd.Process.Signal(syscall.SIGTERM)
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !exit.Sys().(syscall.WaitStatus).Signaled() || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Fatalf("the app ended with %v and printed %q; want it ended by SIGTERM", err, out.String())
	}
	if out.Len() != 0 {
		t.Fatalf("the app printed %q", out.String())
	}
}

// runFailing runs the example app, which must fail with status 1 and
// print nothing on stdout, and returns its stderr.
func runFailing(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || stdout.String() != "" {
		t.Fatalf("%v: %v, stdout %q, stderr %q; want status 1 and nothing on stdout", cmd.Args[1:], err, stdout.String(), stderr.String())
	}
	return stderr.String()
}

// databaseName is how the app names the database at url in its messages:
// the file of the SQLite default, or the URL without its password.
func databaseName(dir, url string) string {
	if url == "" {
		return "sqlite://" + filepath.Join(dir, "var", "app.db")
	}
	return config.Redact(url)
}

// TestTheWorkersNeedTheMigrations: queue:work and schedule:work on a
// database migrate never ran on fail at once with one line, the count and
// the command to run (as the app was run: go run ./cmd/app here), instead
// of logging a missing table every second; once migrated they work.
func TestTheWorkersNeedTheMigrations(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, dir, url string) {
		var failed []string
		for _, args := range [][]string{{"queue:work"}, {"schedule:work"}} {
			failed = append(failed, runFailing(t, command(dir, url, args...)))
		}
		migrated := strings.Count(run(t, dir, url, "migrate"), "Migrated ")
		want := fmt.Sprintf(`app: %d migrations have not run on this database (%s): run "go run ./cmd/app migrate" first`+"\n", migrated, databaseName(dir, url))
		for i, got := range failed {
			if got != want {
				t.Errorf("command %d printed\n%q\nwant\n%q", i, got, want)
			}
		}
		if got := run(t, dir, url, "queue:work", "--stop-when-empty"); !strings.HasSuffix(got, "Processed 0 job attempt(s): 0 succeeded, 0 released for retry, 0 failed.\n") {
			t.Fatalf("queue:work once migrated printed %q", got)
		}
	})
}

// TestServeWarnsOfPendingMigrations: serve on a database migrate never ran
// on logs one warning, with the count and the command to run, and serves.
func TestServeWarnsOfPendingMigrations(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, dir, url string) {
		serve := command(dir, url, "serve")
		stdout, _ := serve.StdoutPipe()
		var stderr strings.Builder
		serve.Stderr = &stderr
		if err := serve.Start(); err != nil {
			t.Fatal(err)
		}
		first, _ := bufio.NewReader(stdout).ReadString('\n')
		base, ok := strings.CutPrefix(strings.TrimSuffix(first, " (Ctrl-C to stop)\n"), "Serving HTTP on ")
		if !ok {
			serve.Process.Kill()
			t.Fatalf("serve printed %q", first)
		}
		status := 0
		if resp, err := http.Get(base + "/healthz"); err == nil {
			status = resp.StatusCode
			resp.Body.Close()
		}
		serve.Process.Signal(syscall.SIGTERM)
		go io.Copy(io.Discard, stdout)
		if err := serve.Wait(); err != nil || status != http.StatusOK {
			t.Fatalf("serve: %v; GET /healthz answered %d, want 200", err, status)
		}
		migrations := strings.Count(run(t, dir, url, "migrate"), "Migrated ")
		name := databaseName(dir, url)
		if strings.ContainsAny(name, ` ="`) { // slog's text handler quotes such a value
			name = strconv.Quote(name)
		}
		want := fmt.Sprintf(`level=WARN msg="%d migrations have not run on this database: the requests that need their tables will fail" logger=navree.db database=%s run="go run ./cmd/app migrate"`+"\n",
			migrations, name)
		if got := regexp.MustCompile(`^time=\S+ `).ReplaceAllString(stderr.String(), ""); got != want {
			t.Fatalf("serve logged\n%q\nwant\n%q", got, want)
		}
	})
}

// TestPostgresConnectionErrorsSayWhatToDo: a database that does not exist
// says how to create it, a server that refuses the connection is one
// line however many addresses and TLS modes pgx tried; neither prints
// the password.
func TestPostgresConnectionErrorsSayWhatToDo(t *testing.T) {
	t.Parallel()
	server, err := neturl.Parse(dbtest.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	missing := fmt.Sprintf("navree_missing_%d", rand.Uint64())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	for _, tt := range []struct{ url, want string }{
		{"postgres://postgres:hunter2-secret@" + server.Host + "/" + missing + "?sslmode=disable",
			`app: database "` + missing + `" does not exist on ` + server.Host + ": create it with: createdb -h " + server.Hostname() + " -p " + server.Port() +
				" -U postgres " + missing + " (or, in psql: CREATE DATABASE " + missing + ";)\n"},
		// No sslmode: pgx tries with TLS, then without, each refused.
		{"postgres://postgres:hunter2-secret@" + closed + "/crm",
			"app: cannot connect to PostgreSQL at " + closed + ": connection refused (is the server running?)\n"},
	} {
		for _, args := range [][]string{{"migrate"}, {"queue:work"}} {
			if got := runFailing(t, command(t.TempDir(), tt.url, args...)); got != tt.want || strings.Contains(got, "hunter2") {
				t.Errorf("%s on %s printed\n%q\nwant\n%q", args[0], config.Redact(tt.url), got, tt.want)
			}
		}
	}
}
