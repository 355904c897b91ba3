package dbtest

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestSkipNote: the first package of a run says why its PostgreSQL tests
// skipped and what to set; every package says how many.
func TestSkipNote(t *testing.T) {
	first := skipNote(41, true)
	if !strings.HasPrefix(first, "dbtest: NAVREE_TEST_POSTGRES_URL is not set, so the PostgreSQL tests skip. To run them, set it to a server's URL, such as\n") ||
		!strings.Contains(first, "NAVREE_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test?sslmode=disable go test ./...\n") ||
		!strings.HasSuffix(first, "dbtest: 41 PostgreSQL test(s) of github.com/navree/navree/db/dbtest skipped\n") {
		t.Errorf("the first note:\n%s", first)
	}
	if later := skipNote(3, false); later != "dbtest: 3 PostgreSQL test(s) of github.com/navree/navree/db/dbtest skipped\n" {
		t.Errorf("a later note: %q", later)
	}
}

// TestParallelYieldsToTheCommandLine: Parallel sets how many parallel
// tests run at once, unless go test was given -parallel. The test binary
// runs itself with and without -test.parallel, its child calling
// Parallel(9) and printing the limit the tests then run with. Under the
// race detector Parallel leaves go test's default, GOMAXPROCS.
func TestParallelYieldsToTheCommandLine(t *testing.T) {
	if os.Getenv("DBTEST_PARALLEL_CHILD") != "" {
		return
	}
	boosted := "9"
	if raceEnabled {
		boosted = strconv.Itoa(runtime.GOMAXPROCS(0))
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, boosted},
		{[]string{"-test.parallel=3"}, "3"},
	} {
		cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$"}, tt.args...)...)
		cmd.Env = append(os.Environ(), "DBTEST_PARALLEL_CHILD=1")
		out, err := cmd.CombinedOutput()
		if got, _, _ := strings.Cut(string(out), "\n"); err != nil || got != "parallel "+tt.want {
			t.Errorf("%v: the child printed %q (%v); want parallel %s", tt.args, out, err, tt.want)
		}
	}
}

func TestMain(m *testing.M) {
	if os.Getenv("DBTEST_PARALLEL_CHILD") != "" {
		Parallel(9)
		fmt.Println("parallel", flag.Lookup("test.parallel").Value)
	}
	os.Exit(Main(m))
}
