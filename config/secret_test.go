package config_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/navree/navree/config"
)

type smtpSection struct {
	Username string        `koanf:"username"`
	Password config.Secret `koanf:"password"`
}

func TestSecretIsNeverShown(t *testing.T) {
	c, err := config.New(config.Sources{Environ: []string{"APP_SMTP__PASSWORD=hunter2-s3cret"}},
		config.Definition{Name: "smtp", Defaults: smtpSection{Username: "app"}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := config.Get[smtpSection](c, "smtp")
	if err != nil {
		t.Fatal(err)
	}
	if s.Password.Reveal() != "hunter2-s3cret" {
		t.Fatalf("Reveal = %q, want the value from the environment", s.Password.Reveal())
	}
	js, _ := json.Marshal(s)
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("config", "smtp", s, "password", s.Password)
	for _, shown := range []string{
		fmt.Sprint(s), fmt.Sprintf("%+v", s), fmt.Sprintf("%#v", s), fmt.Sprintf("%s|%q|%x", s.Password, s.Password, s.Password),
		s.Password.String(), string(js), logged.String(),
	} {
		if strings.Contains(shown, "hunter2") || !strings.Contains(shown, "xxxxx") {
			t.Errorf("the secret shows as %s", shown)
		}
	}
	if got := fmt.Sprint(config.Secret("")); got != "" {
		t.Errorf("an empty secret prints %q, want nothing", got)
	}
}

func TestConfigEnv(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "app.production.toml"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, env := range []string{"", "production"} {
		c, err := config.New(config.Sources{Dir: dir, Env: env})
		if err != nil {
			t.Fatal(err)
		}
		if c.Env() != env {
			t.Errorf("Env = %q, want %q", c.Env(), env)
		}
	}
}
