package config

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/knadh/koanf/parsers/toml/v2"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/v2"
	gotoml "github.com/pelletier/go-toml/v2"
	"go.uber.org/fx"
)

// EnvPrefix starts every environment variable that configures the app.
const EnvPrefix = "APP_"

// Sources says where a [Config] reads its values from.
type Sources struct {
	// Root is the app folder: the folder the relative paths of values, such
	// as an sqlite:// database's, are relative to ([Config.Root]). Empty:
	// the working directory.
	Root string
	// Dir holds app.toml and app.<Env>.toml. Empty: no files are read.
	Dir string
	// Env is the app environment (APP_ENV), such as "production", whose
	// file app.<Env>.toml must exist (empty to run on the other sources
	// alone). Empty: only app.toml is read.
	Env string
	// Environ is the process environment as KEY=VALUE strings; only
	// variables named APP_SECTION__KEY are read.
	Environ []string
	// Overrides sets keys ("queue.workers") above every other source.
	// Tests use it.
	Overrides map[string]any

	rootErr error // Defaults found no app folder: Load fails with it
}

// Defaults returns the sources of a process: the app folder ([FindRoot])
// and its config folder, APP_ENV and the process environment. When there
// is no app folder, [Load] fails saying so: a binary run from another
// folder must not boot on the defaults and create a database there.
func Defaults() Sources {
	root, err := FindRoot()
	return Sources{Root: root, Dir: filepath.Join(root, "config"), Env: os.Getenv("APP_ENV"), Environ: os.Environ(), rootErr: err}
}

// Config holds the merged values of every source and the decoded sections.
type Config struct {
	k        *koanf.Koanf
	root     string            // Sources.Root
	env      string            // Sources.Env
	origin   map[string]string // flattened key -> where its value came from
	sections map[string]any    // section name -> decoded value (T)
}

var envName = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// Load reads every source and merges them. It decodes no section: see
// [New] for that.
func Load(src Sources) (*Config, error) {
	if src.rootErr != nil {
		return nil, src.rootErr
	}
	c := &Config{k: koanf.New("."), root: src.Root, env: src.Env, origin: map[string]string{}, sections: map[string]any{}}
	if src.Dir != "" {
		files := []string{filepath.Join(src.Dir, "app.toml")}
		if src.Env != "" {
			path, err := envFile(src.Dir, src.Env)
			if err != nil {
				return nil, err
			}
			files = append(files, path)
		}
		for _, path := range files {
			if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err := c.merge(file.Provider(path), toml.Parser(), path, nil); err != nil {
				var syntax *gotoml.DecodeError
				if errors.As(err, &syntax) {
					line, col := syntax.Position()
					return nil, fmt.Errorf("config: %s:%d:%d: %w", path, line, col, err)
				}
				return nil, fmt.Errorf("config: read %s: %w", path, err)
			}
		}
	}
	envVar := map[string]string{} // key -> variable name
	provider := env.Provider(".", env.Opt{
		Prefix:      EnvPrefix,
		EnvironFunc: func() []string { return src.Environ },
		TransformFunc: func(name, value string) (string, any) {
			key, ok := EnvKey(name)
			if !ok {
				return "", nil
			}
			envVar[key] = name
			return key, value
		},
	})
	if err := c.merge(provider, nil, "", func(key string) string { return "env " + envVar[key] }); err != nil {
		return nil, fmt.Errorf("config: read environment: %w", err)
	}
	if len(src.Overrides) > 0 {
		if err := c.merge(confmap.Provider(src.Overrides, "."), nil, "overrides", nil); err != nil {
			return nil, fmt.Errorf("config: overrides: %w", err)
		}
	}
	return c, nil
}

// envFile returns the file of the environment env in dir, failing with
// an [*Error] when env is not a name or has no file: a typo in APP_ENV
// must not boot the app without the environment's settings. An
// environment run on variables alone has an empty file.
func envFile(dir, env string) (string, error) {
	if !envName.MatchString(env) {
		return "", &Error{Key: "APP_ENV", Value: env, Source: "env APP_ENV", Allowed: "letters, digits, '.', '_' and '-'"}
	}
	path := filepath.Join(dir, "app."+env+".toml")
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		return path, nil // a file, or an error the read reports
	}
	found, _ := filepath.Glob(filepath.Join(dir, "app.*.toml"))
	var envs []string
	for _, f := range found {
		if name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "app."), ".toml"); envName.MatchString(name) {
			envs = append(envs, name)
		}
	}
	have := "no environment has a file"
	if len(envs) > 0 {
		have = "the environments with a file are " + strings.Join(envs, ", ")
	}
	return "", &Error{Key: "APP_ENV", Value: env, Source: "env APP_ENV", file: path,
		Allowed: have + " (to run an environment on variables alone, create its file empty)", kind: missingFile}
}

// EnvKey maps an environment variable to the key it sets:
// APP_QUEUE__POLL_INTERVAL_MS to queue.poll_interval_ms. It reports false
// for a variable that sets no key, such as APP_ENV.
func EnvKey(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, EnvPrefix)
	if !ok || !strings.Contains(rest, "__") {
		return "", false
	}
	parts := strings.Split(strings.ToLower(rest), "__")
	if slices.Contains(parts, "") {
		return "", false
	}
	return strings.Join(parts, "."), true
}

// merge loads one source into its own koanf, records where each key came
// from, then merges it over what was loaded before.
func (c *Config) merge(p koanf.Provider, parser koanf.Parser, source string, sourceOf func(string) string) error {
	sub := koanf.New(".")
	if err := sub.Load(p, parser); err != nil {
		return err
	}
	for _, key := range sub.Keys() {
		if sourceOf != nil {
			c.origin[key] = sourceOf(key)
		} else {
			c.origin[key] = source
		}
	}
	return c.k.Merge(sub)
}

// Definition is a section declared by a module: its name and the value of
// its type holding the defaults. [Section] provides one to the group
// "config.sections".
type Definition struct {
	Name     string
	Defaults any
}

// New loads src and decodes every section of defs, failing with an [*Error]
// for the first invalid value (sections in name order), then for the
// first key that no section of defs declares, be it a key of a declared
// section or of a section that none declares.
func New(src Sources, defs ...Definition) (*Config, error) {
	c, err := Load(src)
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	sort.Slice(defs, func(i, j int) bool { return defs[i].Name < defs[j].Name })
	for _, def := range defs {
		if _, dup := c.sections[def.Name]; dup {
			return nil, fmt.Errorf("config: section [%s] is declared twice", def.Name)
		}
		ptr := reflect.New(reflect.TypeOf(def.Defaults))
		ptr.Elem().Set(reflect.ValueOf(def.Defaults))
		keys, err := c.decode(def.Name, ptr.Interface())
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			known[k] = true
		}
		c.sections[def.Name] = ptr.Elem().Interface()
	}
	if err := c.checkUnknown(known); err != nil {
		return nil, err
	}
	return c, nil
}

// checkUnknown fails on a key that no section declares: a key its section
// does not have (queue.wokers), or a section that no module of this app
// declares ([databse]), suggesting the nearest known name. The first in
// key order fails.
func (c *Config) checkUnknown(known map[string]bool) error {
	for _, key := range c.k.Keys() {
		if known[key] {
			continue
		}
		section, rest, _ := strings.Cut(key, ".")
		if _, declared := c.sections[section]; declared && rest == "" {
			if m, ok := c.k.Get(key).(map[string]any); ok && len(m) == 0 {
				continue // [queue] with every key commented out
			}
		}
		if _, ok := c.sections[section]; !ok {
			names := slices.Sorted(maps.Keys(c.sections))
			allowed := "no module of this app reads it, and none declares a section"
			if near, ok := Nearest(section, names); ok {
				allowed = "did you mean [" + near + "]?"
			} else if len(names) > 0 {
				allowed = "no module of this app reads it; the sections are [" + strings.Join(names, "], [") + "]"
			}
			return &Error{Key: section, Source: c.origin[key], Allowed: allowed, kind: unknownSection}
		}
		var keys []string
		for k := range known {
			if name, sub, _ := strings.Cut(k, "."); name == section {
				keys = append(keys, sub)
			}
		}
		sort.Strings(keys)
		allowed := "no such key; [" + section + "] has " + strings.Join(keys, ", ")
		value := show(c.k.Get(key))
		if near, ok := Nearest(rest, keys); ok {
			allowed = "did you mean " + near + "?"
			if isSecret(near) && value != "" { // a misspelt password is still a password
				value = masked
			}
		}
		return &Error{Key: key, Value: value, Source: c.origin[key], Allowed: allowed, kind: unknownKey}
	}
	return nil
}

// Nearest returns the name of names nearest to name, if one is near
// enough to be what was meant, for a "did you mean" of an error: letter
// case aside, at most one edit per 3 letters, and at most 2 edits (one per
// 4 letters in a name of 12 or more). An edit inserts, deletes or replaces
// a letter, or swaps two neighbours. On a tie the first name wins.
func Nearest(name string, names []string) (string, bool) {
	best, bestDist := "", -1
	for _, n := range names {
		d := distance(strings.ToLower(name), strings.ToLower(n))
		longer := max(len(name), len(n))
		if d <= max(2, longer/4) && 3*d <= longer && (bestDist < 0 || d < bestDist) {
			best, bestDist = n, d
		}
	}
	return best, bestDist >= 0
}

// distance is the optimal string alignment distance between a and b, in
// bytes: the fewest insertions, deletions, substitutions and swaps of
// neighbours that turn one into the other.
func distance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// Root is the app folder the config was read for ([Sources.Root]): the
// folder relative paths of values are relative to; "" for the working
// directory.
func (c *Config) Root() string { return c.root }

// Env is the app environment the config was read for (APP_ENV, such as
// "production"); empty when none was named, as in development.
func (c *Config) Env() string { return c.env }

// Source says where key's value came from: a file's path, "env
// APP_SECTION__KEY", "overrides", or "default" when no source set it.
func (c *Config) Source(key string) string {
	if s, ok := c.origin[key]; ok {
		return s
	}
	return "default"
}

// Decode fills out, a pointer to a struct holding a section's defaults,
// with the values set for section name, and validates it.
func (c *Config) Decode(name string, out any) error {
	_, err := c.decode(name, out)
	return err
}

// Get returns the decoded section name of a Config built by [New].
func Get[T any](c *Config, name string) (T, error) {
	v, ok := c.sections[name].(T)
	if !ok {
		var zero T
		return zero, fmt.Errorf("config: section [%s] of type %T is not declared", name, zero)
	}
	return v, nil
}

type moduleParams struct {
	fx.In
	Defs []Definition `group:"config.sections"`
}

// Module provides the app's [*Config], read from src, with every section
// that modules declared through [Section] decoded and validated.
func Module(src Sources) fx.Option {
	return fx.Module("config",
		fx.Provide(func(p moduleParams) (*Config, error) { return New(src, p.Defs...) }),
	)
}

// Section declares the section name with the defaults held by a value of
// T, and provides T decoded from the app's [Config], to the fx.Module it
// is given in alone (fx.Private): a module's section is its own, and
// another module that needs what it says asks that module's services.
func Section[T any](name string, defaults T) fx.Option {
	if reflect.TypeOf(defaults) == nil || reflect.TypeOf(defaults).Kind() != reflect.Struct {
		return fx.Error(fmt.Errorf("config: section [%s]: defaults must be a struct, not %T", name, defaults))
	}
	return fx.Options(
		fx.Provide(fx.Annotated{Group: "config.sections", Target: func() Definition {
			return Definition{Name: name, Defaults: defaults}
		}}),
		// The section's type is its module's own: provided inside that
		// module's fx.Module, no other module reads it.
		fx.Provide(fx.Private, func(c *Config) (T, error) { return Get[T](c, name) }),
	)
}
