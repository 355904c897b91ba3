package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindRoot(t *testing.T) {
	dir := t.TempDir()
	mkdir := func(parts ...string) string {
		p := filepath.Join(append([]string{dir}, parts...)...)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	withConfig, withGoMod, empty, binDir := mkdir("crm"), mkdir("example"), mkdir("elsewhere"), mkdir("srv", "crm")
	mkdir("crm", "config")
	mkdir("srv", "crm", "config")
	if err := os.WriteFile(filepath.Join(withGoMod, "go.mod"), []byte("module example\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "crm.toml")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, env, wd, exeDir string
		want, wantErr         string
	}{
		{name: "APP_ROOT", env: withConfig, wd: empty, exeDir: empty, want: withConfig},
		{name: "APP_ROOT without config/ is trusted", env: empty, wd: withConfig, exeDir: empty, want: empty},
		{name: "relative APP_ROOT", env: "../crm/", wd: empty, exeDir: empty, want: withConfig},
		{name: "APP_ROOT missing", env: filepath.Join(dir, "crmm"), wd: withConfig, exeDir: binDir,
			wantErr: "config: APP_ROOT is " + filepath.Join(dir, "crmm") + ", which does not exist: set it to the app's folder, the one that holds config/"},
		{name: "APP_ROOT a file", env: file, wd: withConfig, exeDir: binDir,
			wantErr: "config: APP_ROOT is " + file + ", which is a file: set it to the app's folder, the one that holds config/"},
		{name: "working directory with config/", wd: withConfig, exeDir: binDir, want: withConfig},
		{name: "working directory with go.mod", wd: withGoMod, exeDir: binDir, want: withGoMod},
		{name: "the binary's folder", wd: empty, exeDir: binDir, want: binDir},
		{name: "none", wd: empty, exeDir: empty,
			wantErr: "config: no app folder: neither the working directory (" + empty + ") nor the binary's folder (" + empty + ") holds config/ or go.mod; " +
				"run the app from its folder, or set APP_ROOT to it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := findRoot(tt.env, tt.wd, tt.exeDir)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error %v\nwant %s", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("root %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// TestDefaultsReadTheAppRoot: a process run from another folder reads the
// config folder of its app folder, names the file a value came from, and
// without a root fails instead of booting on the defaults.
func TestDefaultsReadTheAppRoot(t *testing.T) {
	root, elsewhere := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "config"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "config", "app.toml")
	if err := os.WriteFile(file, []byte("[http]\naddr = \"127.0.0.1:9090\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(elsewhere)
	type httpConfig struct {
		Addr string `koanf:"addr"`
	}
	def := Definition{Name: "http", Defaults: httpConfig{Addr: "127.0.0.1:8080"}}

	t.Setenv("APP_ROOT", root)
	c, err := New(Defaults(), def)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := Get[httpConfig](c, "http")
	if got.Addr != "127.0.0.1:9090" || c.Root() != root || c.Source("http.addr") != file {
		t.Fatalf("http.addr %q from %q, root %q; want 127.0.0.1:9090 from %s, root %s", got.Addr, c.Source("http.addr"), c.Root(), file, root)
	}

	t.Setenv("APP_ROOT", "")
	_, err = New(Defaults(), def)
	if err == nil || !strings.HasPrefix(err.Error(), "config: no app folder: neither the working directory ("+elsewhere+") nor the binary's folder (") {
		t.Fatalf("without a root: %v", err)
	}
}
