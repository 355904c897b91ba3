package dbtest

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// skipped counts the tests of this test binary that PostgresURL skipped,
// for Main to report. It, reusing, the pool of migrated schemas and the
// template files are all dbtest keeps across tests.
var skipped atomic.Int64

// reusing is whether Main runs the tests, and so will drop and remove
// what MigratedPostgresURL and MigratedSQLiteURL keep for later tests.
var reusing atomic.Bool

// Main runs a package's tests, and returns the exit code, as m.Run does;
// call it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }
//
// Under Main, [MigratedPostgresURL] and [MigratedSQLiteURL] reuse what
// they migrated; when the tests end, Main drops the reused schemas and
// removes the template files.
//
// When tests skipped for want of NAVREE_TEST_POSTGRES_URL, it says how many
// on the terminal, where a person running go test ./... reads it: go test
// prints nothing of a package whose tests pass, so the skips would go
// unseen. The first package of a go test run to skip also says why and
// what to set. Without a terminal (CI, an editor) it says nothing: go
// test -v shows each skip and its reason there.
func Main(m *testing.M) int {
	reusing.Store(true)
	code := m.Run()
	reusing.Store(false)
	schemas.dropAll()
	templates.removeAll()
	if n := skipped.Load(); n > 0 {
		if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
			fmt.Fprint(tty, skipNote(n, firstToSkip()))
			tty.Close()
		}
	}
	return code
}

// Parallel lets n of a package's parallel tests (t.Parallel) run at once
// unless go test was given -parallel; call it from TestMain before Main:
//
//	func TestMain(m *testing.M) {
//		dbtest.Parallel(4 * runtime.GOMAXPROCS(0))
//		os.Exit(dbtest.Main(m))
//	}
//
// go test runs as many at once as there are cores, which suits tests that
// compute. Tests against databases mostly wait (for a commit's fsync, the
// server, a worker process), so more of them at once finish sooner on the
// same cores; what each asserts must not depend on the machine's speed
// anyway. Under the race detector, which makes the tests bound by the
// CPU, it leaves go test's default.
func Parallel(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	if raceEnabled {
		return
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", strconv.Itoa(n))
	}
}

// skipNote is what Main says of n tests skipped in this package; first
// adds why, for the first package of the run.
func skipNote(n int64, first bool) string {
	var b strings.Builder
	if first {
		fmt.Fprintf(&b, "dbtest: %s is not set, so the PostgreSQL tests skip. To run them, set it to a server's URL, such as\n"+
			"dbtest:   %s=postgres://postgres@127.0.0.1:5432/test?sslmode=disable go test ./...\n", PostgresEnv, PostgresEnv)
	}
	fmt.Fprintf(&b, "dbtest: %d PostgreSQL test(s) of %s skipped\n", n, packageName())
	return b.String()
}

// firstToSkip reports whether no other test binary of this go test run
// (the test binaries share their parent, the go command) has reported
// skips yet: the first to create the run's empty marker file is. It
// removes the markers of runs more than a day old.
func firstToSkip() bool {
	prefix := filepath.Join(os.TempDir(), "navree-dbtest-skips-")
	f, err := os.OpenFile(prefix+strconv.Itoa(os.Getppid()), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return false
	}
	f.Close()
	old, _ := filepath.Glob(prefix + "*")
	for _, path := range old {
		if info, err := os.Stat(path); err == nil && time.Since(info.ModTime()) > 24*time.Hour {
			os.Remove(path)
		}
	}
	return true
}

// packageName is the import path of the package under test, as the test
// binary was built.
func packageName() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Path != "" {
		return strings.TrimSuffix(info.Path, ".test")
	}
	return strings.TrimSuffix(filepath.Base(os.Args[0]), ".test")
}
