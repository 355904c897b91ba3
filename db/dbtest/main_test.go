package dbtest

import (
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
