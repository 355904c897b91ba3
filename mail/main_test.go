package mail_test

import (
	"os"
	"runtime"
	"testing"

	"github.com/navree/navree/db/dbtest"
)

// TestMain runs more of the tests at once than there are cores (they
// mostly wait for commits), and says, on a terminal, how many PostgreSQL
// tests skipped.
func TestMain(m *testing.M) {
	dbtest.Parallel(4 * runtime.GOMAXPROCS(0))
	os.Exit(dbtest.Main(m))
}
