package config_test

import (
	"strings"
	"testing"

	"github.com/navree/navree/config"
	"go.uber.org/fx"
)

// TestASectionIsItsModulesOwn: the module that declares a section reads
// it; another module (or the app around them) cannot take its type: it
// is private to the fx.Module it is declared in.
func TestASectionIsItsModulesOwn(t *testing.T) {
	src := config.Sources{Overrides: map[string]any{"queue.workers": 8}}
	var workers int
	app := fx.New(fx.NopLogger, config.Module(src),
		fx.Module("queue", config.Section("queue", queueConfig{Driver: "database", DefaultQueue: "default", Workers: 4, PollIntervalMs: 1000, Queues: []string{"default"}}),
			fx.Invoke(func(c queueConfig) { workers = c.Workers })))
	if err := app.Err(); err != nil || workers != 8 {
		t.Fatalf("the module reads its section: workers %d, %v", workers, err)
	}
	other := fx.New(fx.NopLogger, config.Module(src),
		fx.Module("queue", config.Section("queue", queueConfig{Driver: "database", DefaultQueue: "default", Workers: 4, PollIntervalMs: 1000, Queues: []string{"default"}})),
		fx.Module("events", fx.Invoke(func(queueConfig) {})))
	if err := other.Err(); err == nil || !strings.Contains(err.Error(), "missing type: config_test.queueConfig") {
		t.Fatalf("another module took the queue's section: %v", err)
	}
}
