package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/navree/navree/config"
)

// FuzzEnvironment feeds any variable name and value to the configuration:
// it either decodes or fails with a config error, never panics.
func FuzzEnvironment(f *testing.F) {
	f.Add("QUEUE__WORKERS", "8")
	f.Add("QUEUE__QUEUES", "high, default,,low")
	f.Add("QUEUE__DRIVER", "redis")
	f.Add("QUEUE__POLL_INTERVAL_MS", "1e309")
	f.Add("QUEUE____X", "")
	f.Add("QUEUE__VERBOSE", "TRUE")
	f.Fuzz(func(t *testing.T, name, value string) {
		c, err := config.New(config.Sources{Environ: []string{"APP_" + name + "=" + value}},
			config.Definition{Name: "queue", Defaults: queueDefaults})
		if err != nil {
			if !errors.Is(err, config.ErrInvalid) && !strings.HasPrefix(err.Error(), "config: ") {
				t.Fatalf("error without the config's words: %v", err)
			}
			return
		}
		got, err := config.Get[queueConfig](c, "queue")
		if err != nil {
			t.Fatal(err)
		}
		if got.Workers < 1 || got.Workers > 1000 || len(got.Queues) == 0 || (got.Driver != "database" && got.Driver != "memory") {
			t.Fatalf("an invalid section passed: %+v", got)
		}
	})
}
