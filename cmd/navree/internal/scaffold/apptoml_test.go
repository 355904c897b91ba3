package scaffold_test

import (
	"bytes"
	"go/ast"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/app/metrics"
	"github.com/navree/navree/config"
	"github.com/navree/navree/db"
	"github.com/navree/navree/events"
	"github.com/navree/navree/mail"
	"github.com/navree/navree/notify"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/dashboard"
	"github.com/navree/navree/schedule"
	"go.uber.org/fx"
)

const framework = "github.com/navree/navree"

// frameworkModules are the framework's modules, by import path: a new
// app's modules/modules.go lists each (TestANewAppHasEveryModule), and
// its config/app.toml shows the sections they read.
var frameworkModules = map[string]func() fx.Option{
	framework + "/db":              db.Module,
	framework + "/queue":           queue.Module,
	framework + "/queue/dashboard": dashboard.Module,
	framework + "/app/metrics":     metrics.Module,
	framework + "/mail":            mail.Module,
	framework + "/events":          events.Module,
	framework + "/notify":          notify.Module,
	framework + "/schedule":        schedule.Module,
}

// root is the framework's checkout, which holds this package.
func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if mod, err := os.ReadFile(filepath.Join(dir, "go.mod")); err != nil || !strings.HasPrefix(string(mod), "module "+framework+"\n") {
		t.Fatalf("%s is not the framework's checkout: %v", dir, err)
	}
	return dir
}

// TestANewAppHasEveryModule: the modules/modules.go of a new app lists
// every module of the framework: every package (apart from tests'
// helpers, commands and internal ones) that declares a Module.
func TestANewAppHasEveryModule(t *testing.T) {
	dir := root(t)
	var found []string
	err := filepath.WalkDir(dir, func(file string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(file, dir))
		if d.IsDir() {
			if name := d.Name(); strings.HasPrefix(name, ".") || name == "testdata" || name == "internal" || name == "cmd" || rel == "/testing" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(file, ".go") || strings.HasSuffix(file, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if declaresModule(f) {
			found = append(found, framework+path.Dir(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for p := range frameworkModules {
		listed = append(listed, p)
	}
	slices.Sort(found)
	slices.Sort(listed)
	if !slices.Equal(found, listed) {
		t.Fatalf("the framework's modules are %v; frameworkModules, and the new app's modules/modules.go, list %v", found, listed)
	}
	app := newApp(t)
	src, err := os.ReadFile(filepath.Join(app, "modules", "modules.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range found {
		if !strings.Contains(string(src), strconv.Quote(p)) || !strings.Contains(string(src), "\t\t"+path.Base(p)+".Module(),\n") {
			t.Errorf("a new app's modules/modules.go lacks %s.Module() of %q:\n%s", path.Base(p), p, src)
		}
	}
}

// declaresModule reports whether f declares a Module that takes nothing,
// as a module's Module does (not config.Module(src)).
func declaresModule(f *ast.File) bool {
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil && d.Name.Name == "Module" && d.Type.Params.NumFields() == 0 {
				return true
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				if v, ok := s.(*ast.ValueSpec); ok && slices.ContainsFunc(v.Names, func(n *ast.Ident) bool { return n.Name == "Module" }) {
					return true
				}
			}
		}
	}
	return false
}

// definitions are the configuration sections of an app of every module
// of the framework, as the app declares them: with the kernel's own
// ([http], [log]).
func definitions(t *testing.T) []config.Definition {
	t.Helper()
	opts := []fx.Option{config.Module(config.Sources{})}
	for _, m := range frameworkModules {
		opts = append(opts, m())
	}
	type in struct {
		fx.In
		Defs []config.Definition `group:"config.sections"`
	}
	var defs []config.Definition
	a := app.New(opts...)
	if _, err := a.Build(fx.Invoke(func(p in) { defs = p.Defs })); err != nil {
		t.Fatal(err)
	}
	order := []string{"app", "database", "http", "log", "queue", "mail", "schedule", "dashboard"} // then the others by name
	rank := func(name string) int {
		if i := slices.Index(order, name); i >= 0 {
			return i
		}
		return len(order)
	}
	slices.SortFunc(defs, func(a, b config.Definition) int {
		if d := rank(a.Name) - rank(b.Name); d != 0 {
			return d
		}
		return strings.Compare(a.Name, b.Name)
	})
	return defs
}

const appTOMLTemplate = "templates/new/config/app.toml.tmpl"

// TestAppTOMLIsMadeOfTheConfigTypes: the config/app.toml navree new
// writes is made of the sections the framework's modules declare, each
// key with its Config field's doc comment and its default, commented
// out, so it cannot drift from them. go test -update rewrites it.
func TestAppTOMLIsMadeOfTheConfigTypes(t *testing.T) {
	got := appTOML(t, root(t), definitions(t))
	if *update {
		if err := os.WriteFile(appTOMLTemplate, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(appTOMLTemplate)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the modules' Config types (go test ./cmd/navree/internal/scaffold -run TestAppTOMLIsMadeOfTheConfigTypes -update rewrites it); made of them:\n%s", appTOMLTemplate, got)
	}
}

// keyLine is a key of app.toml, commented out.
var keyLine = regexp.MustCompile(`^# ([a-z0-9_.]+) = (.*)$`)

// TestANewAppTOMLHoldsEveryKeyWithItsDefault: every line of a new app's
// config/app.toml that shows a key, uncommented, sets the key to its
// default, and every key of every section is there.
func TestANewAppTOMLHoldsEveryKeyWithItsDefault(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(newApp(t), "config", "app.toml"))
	if err != nil {
		t.Fatal(err)
	}
	var uncommented []string
	for _, line := range strings.Split(string(src), "\n") {
		if keyLine.MatchString(line) {
			line = strings.TrimPrefix(line, "# ")
		}
		uncommented = append(uncommented, line)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "app.toml")
	if err := os.WriteFile(file, []byte(strings.Join(uncommented, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	defs := definitions(t)
	c, err := config.New(config.Sources{Dir: dir}, slices.Clone(defs)...) // fails on a key no section has
	if err != nil {
		t.Fatal(err)
	}
	for _, def := range defs {
		for _, key := range keys(reflect.TypeOf(def.Defaults), def.Name+".") {
			if c.Source(key) != file {
				t.Errorf("config/app.toml lacks %s", key)
			}
		}
		fromFile := reflect.New(reflect.TypeOf(def.Defaults)) // zero: only what the file sets
		if err := c.Decode(def.Name, fromFile.Interface()); err != nil {
			t.Errorf("config/app.toml does not set [%s] to its defaults: %v", def.Name, err)
		} else if !sameValues(fromFile.Elem(), reflect.ValueOf(def.Defaults)) {
			t.Errorf("config/app.toml sets [%s] to %+v; its defaults are %+v", def.Name, fromFile.Elem(), def.Defaults)
		}
	}
}

// keys are the keys of a section of type typ, each after prefix, as
// config decodes them.
func keys(typ reflect.Type, prefix string) []string {
	var out []string
	for _, f := range fields(typ) {
		if f.sub != nil {
			out = append(out, keys(f.sub, prefix+f.key+".")...)
		} else {
			out = append(out, prefix+f.key)
		}
	}
	return out
}

// sameValues compares two sections, an empty list and a nil one alike.
func sameValues(a, b reflect.Value) bool {
	if a.Kind() == reflect.Slice && a.Len() == 0 && b.Len() == 0 {
		return true
	}
	if a.Kind() == reflect.Struct {
		for i := range a.NumField() {
			if a.Type().Field(i).IsExported() && !sameValues(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}

// field is a key of a section's struct, as config decodes it.
type field struct {
	name string       // the Go field's
	key  string       // its koanf tag, or its name in lower case
	sub  reflect.Type // a struct of keys under key, not a value
	idx  int
}

var durationType = reflect.TypeFor[time.Duration]()

func fields(typ reflect.Type) []field {
	var out []field
	for i := range typ.NumField() {
		f := typ.Field(i)
		key := f.Tag.Get("koanf")
		if !f.IsExported() || key == "-" {
			continue
		}
		if key == "" {
			key = strings.ToLower(f.Name)
		}
		fd := field{name: f.Name, key: key, idx: i}
		if f.Type.Kind() == reflect.Struct && f.Type != durationType {
			fd.sub = f.Type
		}
		out = append(out, fd)
	}
	return out
}

const appTOMLHeader = `{{- /* Made by go test ./cmd/navree/internal/scaffold -run TestAppTOMLIsMadeOfTheConfigTypes -update
from the Config types of the framework's modules: do not edit by hand. */ -}}
# The configuration of {{.Name}}: every section and key its modules read,
# each with what it is and its default, commented out: uncomment a line to
# change it. A key no module reads fails the boot. An environment
# variable overrides a key: APP_QUEUE__WORKERS=8 sets [queue] workers.
# APP_ENV=production also reads config/app.production.toml.
`

// appTOML makes the template of config/app.toml: for each section of
// defs, each key's doc comment (its Config field's, read in the
// framework's source at dir) and its default, commented out.
func appTOML(t *testing.T, dir string, defs []config.Definition) []byte {
	t.Helper()
	var b strings.Builder
	for _, def := range defs {
		b.WriteString("\n[" + def.Name + "]\n")
		first := true
		writeKeys(t, &b, dir, def.Name, "", reflect.ValueOf(def.Defaults), &first)
	}
	// The docs are text of the template, not actions.
	return []byte(appTOMLHeader + strings.ReplaceAll(b.String(), "{{", `{{"{{"}}`))
}

// writeKeys writes the keys of the section struct v, each after prefix,
// with their docs: a key with a doc after a blank line, unless first, one
// without right after the key before (Password after Username, which
// tells of both).
func writeKeys(t *testing.T, b *strings.Builder, dir, section, prefix string, v reflect.Value, first *bool) {
	t.Helper()
	docs := fieldDocs(t, dir, v.Type())
	fs := fields(v.Type())
	for _, f := range fs {
		if f.sub != nil {
			writeKeys(t, b, dir, section, prefix+f.key+".", v.Field(f.idx), first)
			continue
		}
		doc := docText(docs[f.name], v.Type(), fs)
		if doc != "" && !*first {
			b.WriteString("\n")
		}
		*first = false
		b.WriteString(doc)
		if v.Field(f.idx).Type() == reflect.TypeFor[config.Secret]() {
			b.WriteString("# Better set in the environment than here: " + config.EnvPrefix + strings.ToUpper(section+"__"+strings.ReplaceAll(prefix+f.key, ".", "__")) + ".\n")
		}
		b.WriteString("# " + prefix + f.key + " = " + tomlValue(t, v.Field(f.idx)) + "\n")
	}
}

// fieldDocs are the doc comments of the fields of the struct type typ,
// read in its package's source under dir, by field name.
func fieldDocs(t *testing.T, dir string, typ reflect.Type) map[string]string {
	t.Helper()
	rel, ok := strings.CutPrefix(typ.PkgPath(), framework)
	if !ok {
		t.Fatalf("the section type %s is not the framework's: its docs cannot be read", typ)
	}
	files, _ := filepath.Glob(filepath.Join(dir, filepath.FromSlash(rel), "*.go"))
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				ts := s.(*ast.TypeSpec)
				st, ok := ts.Type.(*ast.StructType)
				if ts.Name.Name != typ.Name() || !ok {
					continue
				}
				docs := map[string]string{}
				for _, fl := range st.Fields.List {
					for _, n := range fl.Names {
						docs[n.Name] = fl.Doc.Text()
					}
				}
				return docs
			}
		}
	}
	t.Fatalf("no struct type %s in %s", typ.Name(), filepath.Join(dir, filepath.FromSlash(rel)))
	return nil
}

var (
	docLink          = regexp.MustCompile(`\[([A-Z]\w*)\]`)
	qualifiedDocLink = regexp.MustCompile(`\[([a-z]\w*\.[A-Z]\w*)\]`)
)

// docText is a field's doc comment as lines of TOML comments, its Go
// names those of the keys (URL is url, MaskKeys mask_keys) and its links
// to Go names the names alone, qualified ([MaxWorkers] is
// queue.MaxWorkers).
func docText(doc string, typ reflect.Type, fs []field) string {
	if doc == "" {
		return ""
	}
	doc = docLink.ReplaceAllString(doc, path.Base(typ.PkgPath())+".$1")
	doc = qualifiedDocLink.ReplaceAllString(doc, "$1")
	for _, f := range fs {
		doc = regexp.MustCompile(`\b`+f.name+`\b`).ReplaceAllString(doc, f.key)
	}
	p := &comment.Printer{TextPrefix: "# ", TextWidth: 70}
	return string(p.Text(new(comment.Parser).Parse(doc)))
}

// tomlValue is v as TOML writes it.
func tomlValue(t *testing.T, v reflect.Value) string {
	t.Helper()
	switch {
	case v.Type() == durationType:
		s := time.Duration(v.Int()).String()
		if strings.HasSuffix(s, "m0s") {
			s = strings.TrimSuffix(s, "0s")
		}
		if strings.HasSuffix(s, "h0m") {
			s = strings.TrimSuffix(s, "0m")
		}
		return strconv.Quote(s)
	case v.Kind() == reflect.String:
		return strconv.Quote(v.String())
	case v.Kind() == reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case v.CanInt():
		return strconv.FormatInt(v.Int(), 10)
	case v.CanUint():
		return strconv.FormatUint(v.Uint(), 10)
	case v.CanFloat():
		return strconv.FormatFloat(v.Float(), 'f', -1, 64)
	case v.Kind() == reflect.Slice:
		items := make([]string, v.Len())
		for i := range items {
			items[i] = tomlValue(t, v.Index(i))
		}
		return "[" + strings.Join(items, ", ") + "]"
	}
	t.Fatalf("app.toml cannot show a key of type %s: teach tomlValue", v.Type())
	return ""
}
