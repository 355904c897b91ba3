package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/navree/navree/config"
)

// queueConfig mirrors the shape of a module's section.
type queueConfig struct {
	Driver         string   `koanf:"driver" validate:"oneof=database memory"`
	DefaultQueue   string   `koanf:"default_queue" validate:"required,max=64"`
	Workers        int      `koanf:"workers" validate:"min=1,max=1000"`
	PollIntervalMs int      `koanf:"poll_interval_ms" validate:"min=1"`
	Queues         []string `koanf:"queues" validate:"required"`
	Verbose        bool     `koanf:"verbose"`
}

var queueDefaults = queueConfig{Driver: "database", DefaultQueue: "default", Workers: 4, PollIntervalMs: 1000, Queues: []string{"high", "default"}}

func write(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func load(t *testing.T, src config.Sources) (queueConfig, error) {
	t.Helper()
	c, err := config.New(src, config.Definition{Name: "queue", Defaults: queueDefaults})
	if err != nil {
		return queueConfig{}, err
	}
	return config.Get[queueConfig](c, "queue")
}

func TestDefaultsWhenNothingIsSet(t *testing.T) {
	got, err := load(t, config.Sources{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, queueDefaults) {
		t.Fatalf("got %+v, want the defaults %+v", got, queueDefaults)
	}
}

func TestPrecedence(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "app.toml", "[queue]\nworkers = 2\npoll_interval_ms = 50\ndefault_queue = \"file\"\nqueues = [\"a\", \"b\"]\n")
	write(t, dir, "app.production.toml", "[queue]\nworkers = 3\npoll_interval_ms = 60\n")
	write(t, dir, "app.staging.toml", "[queue]\nworkers = 99\n")
	src := config.Sources{
		Dir: dir, Env: "production",
		Environ: []string{"APP_QUEUE__WORKERS=8", "APP_QUEUE__QUEUES=high, default,low", "APP_ENV=production", "HOME=/root"},
	}
	c, err := config.New(src, config.Definition{Name: "queue", Defaults: queueDefaults})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := config.Get[queueConfig](c, "queue")
	want := queueConfig{Driver: "database", DefaultQueue: "file", Workers: 8, PollIntervalMs: 60, Queues: []string{"high", "default", "low"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for key, source := range map[string]string{
		"queue.workers":          "env APP_QUEUE__WORKERS",
		"queue.poll_interval_ms": filepath.Join(dir, "app.production.toml"),
		"queue.default_queue":    filepath.Join(dir, "app.toml"),
		"queue.driver":           "default",
	} {
		if got := c.Source(key); got != source {
			t.Errorf("Source(%q) = %q, want %q", key, got, source)
		}
	}

	src.Overrides = map[string]any{"queue.workers": 16}
	got, err = load(t, src)
	if err != nil || got.Workers != 16 {
		t.Fatalf("overrides: workers = %d, %v; want 16", got.Workers, err)
	}
}

func TestInvalidValuesNameKeyValueSourceAndAllowed(t *testing.T) {
	tests := []struct {
		name    string
		give    string // APP_ variable
		file    string // or app.toml body
		wantErr string
	}{
		{name: "enum", give: "APP_QUEUE__DRIVER=redis",
			wantErr: `config: invalid value for queue.driver: "redis" (from env APP_QUEUE__DRIVER); allowed: one of database, memory`},
		{name: "not a number", give: "APP_QUEUE__WORKERS=many",
			wantErr: `config: invalid value for queue.workers: "many" (from env APP_QUEUE__WORKERS); allowed: a whole number`},
		{name: "below min", give: "APP_QUEUE__WORKERS=0",
			wantErr: `config: invalid value for queue.workers: "0" (from env APP_QUEUE__WORKERS); allowed: at least 1, at most 1000`},
		{name: "above max", give: "APP_QUEUE__WORKERS=1001",
			wantErr: `config: invalid value for queue.workers: "1001" (from env APP_QUEUE__WORKERS); allowed: at least 1, at most 1000`},
		{name: "fraction", give: "APP_QUEUE__POLL_INTERVAL_MS=1.5",
			wantErr: `config: invalid value for queue.poll_interval_ms: "1.5" (from env APP_QUEUE__POLL_INTERVAL_MS); allowed: a whole number`},
		{name: "empty required", give: "APP_QUEUE__DEFAULT_QUEUE=",
			wantErr: `config: invalid value for queue.default_queue: "" (from env APP_QUEUE__DEFAULT_QUEUE); allowed: a non-empty value, at most 64`},
		{name: "list of empty items", give: "APP_QUEUE__QUEUES= , ",
			wantErr: `config: invalid value for queue.queues: " , " (from env APP_QUEUE__QUEUES); allowed: a comma-separated list with no empty item`},
		{name: "empty item in a list", give: "APP_QUEUE__QUEUES=high, ,default",
			wantErr: `config: invalid value for queue.queues: "high, ,default" (from env APP_QUEUE__QUEUES); allowed: a comma-separated list with no empty item`},
		{name: "empty list", give: "APP_QUEUE__QUEUES=",
			wantErr: `config: invalid value for queue.queues: "" (from env APP_QUEUE__QUEUES); allowed: a non-empty value`},
		{name: "bool", give: "APP_QUEUE__VERBOSE=maybe",
			wantErr: `config: invalid value for queue.verbose: "maybe" (from env APP_QUEUE__VERBOSE); allowed: true or false`},
		{name: "wrong type in file", file: "[queue]\nworkers = \"four\"\n",
			wantErr: `config: invalid value for queue.workers: "four" (from DIR/app.toml); allowed: a whole number`},
		{name: "string wanted", file: "[queue]\ndriver = 3\n",
			wantErr: `config: invalid value for queue.driver: "3" (from DIR/app.toml); allowed: a string`},
		{name: "list of strings", file: "[queue]\nqueues = [1, 2]\n",
			wantErr: `config: invalid value for queue.queues: "1,2" (from DIR/app.toml); allowed: a list of strings`},
		{name: "unknown key in file", file: "[queue]\nwokers = 8\n",
			wantErr: `config: unknown key queue.wokers = "8" (from DIR/app.toml): did you mean workers?`},
		{name: "unknown key in env", give: "APP_QUEUE__WOKERS=8",
			wantErr: `config: unknown key queue.wokers = "8" (from env APP_QUEUE__WOKERS): did you mean workers?`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, dir := sources(t, tt.give, tt.file)
			_, err := load(t, src)
			want := strings.ReplaceAll(tt.wantErr, "DIR", dir)
			if err == nil || err.Error() != want {
				t.Fatalf("error:\n got %v\nwant %s", err, want)
			}
			if !errors.Is(err, config.ErrInvalid) {
				t.Errorf("errors.Is(err, config.ErrInvalid) = false for %v", err)
			}
		})
	}
}

// A TOML syntax error names the file, the line and the column (in bytes,
// from 1) as path:line:col:, the form editors jump to.
func TestBrokenFileNamesFileLineAndColumn(t *testing.T) {
	tests := []struct {
		name string
		file string // app.toml, or app.production.toml read for APP_ENV=production
		give string
		want string // after "config: PATH:"
	}{
		{
			name: "bad number",
			file: "app.toml",
			give: "[queue]\nworkers = 80x\n",
			// "workers = 80" is 12 bytes: the x is column 13.
			want: "2:13: toml: expected newline but got U+0078 'x'",
		},
		{
			name: "unclosed table header",
			file: "app.toml",
			give: "# the queue\n[queue\nworkers = 1\n",
			// "[queue" is 6 bytes: its end of line is column 7.
			want: "2:7: toml: expected character ]",
		},
		{
			name: "missing quote",
			file: "app.toml",
			give: "[queue]\ndriver = \"memory\nworkers = 1\n",
			// `driver = "memory` is 16 bytes: its end of line is column 17.
			want: "2:17: toml: basic strings cannot have new lines",
		},
		{
			name: "environment file",
			file: "app.production.toml",
			give: "[queue]\n\n  workers = 1_\n",
			// "  workers = 1_" is 14 bytes: the underscore is column 14.
			want: "3:14: toml: number cannot end with underscore",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "app.toml", "")
			write(t, dir, "app.production.toml", "")
			write(t, dir, tt.file, tt.give)
			_, err := load(t, config.Sources{Dir: dir, Env: "production"})
			want := "config: " + filepath.Join(dir, tt.file) + ":" + tt.want
			if err == nil || err.Error() != want {
				t.Fatalf("error = %v\nwant    %s", err, want)
			}
		})
	}
}

func TestUnknownSectionsAndKeysFailNamingTheNearest(t *testing.T) {
	const queueKeys = "default_queue, driver, poll_interval_ms, queues, verbose, workers"
	tests := []struct {
		name    string
		give    string // APP_ variable
		file    string // or app.toml body
		wantErr string
	}{
		{name: "section typo in file", file: "[queu]\nworkers = 8\n",
			wantErr: `config: unknown section [queu] (from DIR/app.toml): did you mean [queue]?`},
		{name: "section typo in env", give: "APP_QUEUES__WORKERS=8",
			wantErr: `config: unknown section [queues] (from env APP_QUEUES__WORKERS): did you mean [queue]?`},
		{name: "section typo in letter case", file: "[Store]\nurl = \"postgres://db\"\n",
			wantErr: `config: unknown section [Store] (from DIR/app.toml): did you mean [store]?`},
		{name: "section of no module", file: "[mail]\nfrom = \"a@b.c\"\n",
			wantErr: `config: unknown section [mail] (from DIR/app.toml): no module of this app reads it; the sections are [queue], [store]`},
		{name: "section of no module, its value not shown", give: "APP_REDIS__URL=redis://:S3cret@cache",
			wantErr: `config: unknown section [redis] (from env APP_REDIS__URL): no module of this app reads it; the sections are [queue], [store]`},
		{name: "key typo in file", file: "[queue]\nwokers = 8\n",
			wantErr: `config: unknown key queue.wokers = "8" (from DIR/app.toml): did you mean workers?`},
		{name: "key typo in env", give: "APP_QUEUE__WORKRS=8",
			wantErr: `config: unknown key queue.workrs = "8" (from env APP_QUEUE__WORKRS): did you mean workers?`},
		{name: "key typo in letter case", file: "[queue]\nWorkers = 8\n",
			wantErr: `config: unknown key queue.Workers = "8" (from DIR/app.toml): did you mean workers?`},
		{name: "key far from any", give: "APP_QUEUE__SPEED=3",
			wantErr: `config: unknown key queue.speed = "3" (from env APP_QUEUE__SPEED): no such key; [queue] has ` + queueKeys},
		{name: "short key far from any", give: "APP_QUEUE__DB=x",
			wantErr: `config: unknown key queue.db = "x" (from env APP_QUEUE__DB): no such key; [queue] has ` + queueKeys},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, dir := sources(t, tt.give, tt.file)
			_, err := config.New(src, config.Definition{Name: "queue", Defaults: queueDefaults}, config.Definition{Name: "store", Defaults: storeConfig{URL: "postgres://db"}})
			want := strings.ReplaceAll(tt.wantErr, "DIR", dir)
			if err == nil || err.Error() != want {
				t.Fatalf("error:\n got %v\nwant %s", err, want)
			}
			var ce *config.Error
			if !errors.Is(err, config.ErrInvalid) || !errors.As(err, &ce) {
				t.Errorf("error %v is not a *config.Error matching config.ErrInvalid", err)
			}
		})
	}
}

type pair struct {
	Low  int `koanf:"low"`
	High int `koanf:"high"`
}

func (p pair) Validate() error {
	if p.Low > p.High {
		return config.Invalid("pair.low", p.Low, "at most pair.high")
	}
	return nil
}

func TestValidateMethod(t *testing.T) {
	_, err := config.New(config.Sources{Environ: []string{"APP_PAIR__LOW=5"}}, config.Definition{Name: "pair", Defaults: pair{Low: 1, High: 2}})
	want := `config: invalid value for pair.low: "5" (from env APP_PAIR__LOW); allowed: at most pair.high`
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %s", err, want)
	}
}

func TestEnvKey(t *testing.T) {
	tests := []struct {
		give   string
		want   string
		wantOK bool
	}{
		{"APP_QUEUE__WORKERS", "queue.workers", true},
		{"APP_QUEUE__POLL_INTERVAL_MS", "queue.poll_interval_ms", true},
		{"APP_ENV", "", false},
		{"APP___X", "", false},
		{"OTHER_QUEUE__WORKERS", "", false},
	}
	for _, tt := range tests {
		got, ok := config.EnvKey(tt.give)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("EnvKey(%q) = %q, %v; want %q, %v", tt.give, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestBadAppEnv(t *testing.T) {
	_, err := load(t, config.Sources{Dir: t.TempDir(), Env: "../secrets"})
	if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), "APP_ENV") {
		t.Fatalf("error = %v, want an invalid APP_ENV", err)
	}
}

// storeConfig is a section holding secrets.
type storeConfig struct {
	URL      string `koanf:"url" validate:"required"`
	Password string `koanf:"password" validate:"max=8"`
}

func (s storeConfig) Validate() error {
	if !strings.HasPrefix(s.URL, "postgres://") {
		return config.Invalid("store.url", s.URL, "a postgres:// URL")
	}
	return nil
}

// TestAnEmptySectionIsNoKey: a section whose keys are all commented out,
// as in a new app's config/app.toml, holds no key; an empty section of
// a name no module declares is still an error.
func TestAnEmptySectionIsNoKey(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "app.toml"), []byte("[queue]\n# workers = 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	type queueSection struct {
		Workers int `koanf:"workers"`
	}
	c, err := config.New(config.Sources{Dir: dir}, config.Definition{Name: "queue", Defaults: queueSection{Workers: 4}})
	if err != nil {
		t.Fatalf("an empty [queue]: %v", err)
	}
	if q, _ := config.Get[queueSection](c, "queue"); q.Workers != 4 {
		t.Fatalf("workers = %d, want the default", q.Workers)
	}
	if err := os.WriteFile(filepath.Join(dir, "app.toml"), []byte("[queu]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := config.New(config.Sources{Dir: dir}, config.Definition{Name: "queue", Defaults: queueSection{}}); err == nil ||
		!strings.Contains(err.Error(), "unknown section [queu]") {
		t.Fatalf("an empty unknown section: %v", err)
	}
}

func TestErrorsShowNoSecret(t *testing.T) {
	tests := []struct {
		name    string
		give    string // APP_ variable
		file    string // or app.toml body
		wantErr string
	}{
		{name: "misspelt secret key", give: "APP_STORE__PASWORD=S3cret",
			wantErr: `config: unknown key store.pasword = "xxxxx" (from env APP_STORE__PASWORD): did you mean password?`},
		{name: "unknown key holding a URL", give: "APP_STORE__URLL=postgres://bob:S3cret@db/crm?sslpassword=S3cret",
			wantErr: `config: unknown key store.urll = "postgres://bob:xxxxx@db/crm?sslpassword=xxxxx" (from env APP_STORE__URLL): did you mean url?`},
		{name: "invalid URL", give: "APP_STORE__URL=mysql://bob@db/crm?password=S3cret",
			wantErr: `config: invalid value for store.url: "mysql://bob@db/crm?password=xxxxx" (from env APP_STORE__URL); allowed: a postgres:// URL`},
		{name: "invalid key=value string", give: `APP_STORE__URL=host=db user=bob password='S3cret \'x'`,
			wantErr: `config: invalid value for store.url: "host=db user=bob password=xxxxx" (from env APP_STORE__URL); allowed: a postgres:// URL`},
		{name: "invalid secret", file: "[store]\nurl = \"postgres://db\"\npassword = \"S3cretS3cret\"\n",
			wantErr: `config: invalid value for store.password: "xxxxx" (from DIR/app.toml); allowed: at most 8`},
		{name: "unknown secret", give: "APP_STORE__API_TOKEN=S3cret",
			wantErr: `config: unknown key store.api_token = "xxxxx" (from env APP_STORE__API_TOKEN): no such key; [store] has password, url`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			src := config.Sources{Dir: dir, Environ: []string{"APP_STORE__URL=postgres://db"}}
			if tt.give != "" {
				src.Environ = append(src.Environ, tt.give)
			}
			if tt.file != "" {
				write(t, dir, "app.toml", tt.file)
				src.Environ = nil
			}
			_, err := config.New(src, config.Definition{Name: "store", Defaults: storeConfig{}})
			want := strings.ReplaceAll(tt.wantErr, "DIR", dir)
			if err == nil || err.Error() != want {
				t.Fatalf("error:\n got %v\nwant %s", err, want)
			}
		})
	}
}

func TestAppEnvWithoutAFileFails(t *testing.T) {
	const hint = " (to run an environment on variables alone, create its file empty)"
	dir := t.TempDir()
	_, err := load(t, config.Sources{Dir: dir, Env: "production"})
	want := `config: no file ` + filepath.Join(dir, "app.production.toml") + ` for APP_ENV "production" (from env APP_ENV); no environment has a file` + hint
	if !errors.Is(err, config.ErrInvalid) || err.Error() != want {
		t.Fatalf("no file at all: error\n got %v\nwant %s", err, want)
	}

	write(t, dir, "app.production.toml", "") // production runs on variables alone
	write(t, dir, "app.staging.toml", "[queue]\nworkers = 2\n")
	_, err = load(t, config.Sources{Dir: dir, Env: "prodution"})
	want = `config: no file ` + filepath.Join(dir, "app.prodution.toml") + ` for APP_ENV "prodution" (from env APP_ENV); the environments with a file are production, staging` + hint
	if !errors.Is(err, config.ErrInvalid) || err.Error() != want {
		t.Fatalf("a typo: error\n got %v\nwant %s", err, want)
	}

	got, err := load(t, config.Sources{Dir: dir, Env: "production", Environ: []string{"APP_QUEUE__WORKERS=8"}})
	if err != nil || got.Workers != 8 {
		t.Fatalf("an empty file: workers = %d, %v; want 8 from the environment", got.Workers, err)
	}
}

// sources are the sources of a table test's case: a variable (env, if
// not empty) and an app.toml (file, if not empty) in a folder of its own,
// which it returns too.
func sources(t *testing.T, env, file string) (config.Sources, string) {
	t.Helper()
	dir := t.TempDir()
	src := config.Sources{Dir: dir}
	if env != "" {
		src.Environ = []string{env}
	}
	if file != "" {
		write(t, dir, "app.toml", file)
	}
	return src, dir
}

// TestAnEmptyListIsEmptyNotUnset: a list key set to [] in a file, or to
// "" in the environment, decodes to an empty list, which a module can
// tell from a key left unset (its default).
func TestAnEmptyListIsEmptyNotUnset(t *testing.T) {
	type section struct {
		Keys []string `koanf:"keys"`
	}
	def := config.Definition{Name: "mask", Defaults: section{Keys: []string{"password"}}}
	dir := t.TempDir()
	write(t, dir, "app.toml", "[mask]\nkeys = []\n")
	for _, src := range []config.Sources{{Dir: dir}, {Environ: []string{"APP_MASK__KEYS="}}} {
		c, err := config.New(src, def)
		if err != nil {
			t.Fatal(err)
		}
		got, err := config.Get[section](c, "mask")
		if err != nil || got.Keys == nil || len(got.Keys) != 0 {
			t.Errorf("%+v: keys = %#v, %v; want an empty, non-nil list", src, got.Keys, err)
		}
	}
}

// TestNearestSuggestsWhatWasMeant: a swap of neighbours is one edit; a
// long name may be three edits off; a short one is not guessed at.
func TestNearestSuggestsWhatWasMeant(t *testing.T) {
	makes := []string{"make:module", "make:job", "make:listener", "make:notification", "make:mail", "make:migration", "make:command"}
	for _, tt := range []struct {
		name  string
		names []string
		want  string
	}{
		{"wokrers", []string{"workers", "driver"}, "workers"},
		{"Workers", []string{"workers"}, "workers"},
		{"make:jbo", makes, "make:job"},
		{"make:migrate", makes, "make:migration"},
		{"make:controller", makes, ""},
		{"qu", []string{"queue"}, ""},
		{"dbx", []string{"db", "dbx2"}, "db"}, // a tie: the first wins
	} {
		got, ok := config.Nearest(tt.name, tt.names)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("Nearest(%q) = %q, %v; want %q", tt.name, got, ok, tt.want)
		}
	}
}
