package driver_test

import (
	"os"
	"testing"

	"github.com/navree/navree/queue/internal/driver/drivertest"
)

// TestMain runs the tests as the conformance suite's (drivertest.Main).
func TestMain(m *testing.M) { os.Exit(drivertest.Main(m)) }
