package app

import (
	"runtime/debug"
	"testing"
)

// TestInvokedAs: hints run another command the way this one was run: go
// run of the main package from its module's folder when go run built the
// binary (in a go-build folder), else the binary as it was typed, not the
// app's name ("crm migrate", which no shell may find).
func TestInvokedAs(t *testing.T) {
	module := func(pkg, version string) *debug.BuildInfo {
		return &debug.BuildInfo{Path: pkg, Main: debug.Module{Path: "example.com/crm", Version: version}}
	}
	tests := []struct {
		give string
		info *debug.BuildInfo
		want Invocation
	}{
		{"/tmp/go-build1234567/b001/exe/app", module("example.com/crm/cmd/app", "(devel)"), "go run ./cmd/app"},
		{"/home/ada/.cache/go-build/tmp/go-build99/b001/exe/app", module("example.com/crm/cmd/app", ""), "go run ./cmd/app"},
		{"/tmp/go-build1234567/b001/exe/crm", module("example.com/crm", "(devel)"), "go run ."},
		{"/tmp/go-build1234567/b001/app.test", module("example.com/crm/cmd/app.test", "(devel)"), "go run ./cmd/app"},
		{"/tmp/go-build1234567/b001/exe/app", module("example.com/crm/cmd/app", "v1.2.0"), "go run example.com/crm/cmd/app@v1.2.0"},
		{"/tmp/go-build1234567/b001/exe/main", module("command-line-arguments", "(devel)"), "go run ."},
		{"/tmp/go-build1234567/b001/exe/main", nil, "go run ."},
		{"./app", module("example.com/crm/cmd/app", "(devel)"), "./app"},
		{"/srv/app/app", nil, "/srv/app/app"},
		{"crm", nil, "crm"},
	}
	for _, tt := range tests {
		if got := invokedAs(tt.give, tt.info); got != tt.want {
			t.Errorf("invokedAs(%q, %v) = %q, want %q", tt.give, tt.info, got, tt.want)
		}
	}
}
