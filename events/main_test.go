package events_test

import (
	"os"
	"testing"

	"github.com/navree/navree/db/dbtest"
)

// TestMain says, on a terminal, how many PostgreSQL tests skipped.
func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }
