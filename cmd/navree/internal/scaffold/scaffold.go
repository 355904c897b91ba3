// Package scaffold writes new Navree apps from the templates it embeds:
// the generators of the navree command. It needs no configuration, no
// database and no network.
package scaffold

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"go/format"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/template"

	"golang.org/x/mod/modfile"
)

//go:embed templates
var templates embed.FS

// App says what New writes.
type App struct {
	// Module is the new app's module path, such as github.com/acme/crm.
	Module string
	// FrameworkPath, when set, is a clone of the framework the app builds
	// against: go.mod replaces the framework with it (by a path relative
	// to the app where the two share a folder below the root, else
	// absolute), lists every module the app's packages need at the
	// clone's versions (go list in the clone, which fetches none the
	// module cache holds), and go.sum is the clone's: the app builds and
	// tests with no network and no go mod tidy.
	FrameworkPath string
	// FrameworkVersion is the framework's version the app requires:
	// v0.0.0 by default, the version of a replaced framework. Without
	// FrameworkPath, go.mod requires the framework alone, and go mod tidy
	// is to list the rest.
	FrameworkVersion string
}

// Name is the app's command name: the last element of its module path.
func (a App) Name() string { return path.Base(a.Module) }

var modulePath = regexp.MustCompile(`^[a-z0-9]([a-z0-9._~/-]*[a-z0-9])?$`)

// GoVersion is the go line of a new app's go.mod: the oldest Go the
// framework builds with, as its own go.mod says.
const GoVersion = "1.26.0"

// New writes the app a into dir, which must not exist or be empty, and
// returns the files it wrote, relative to dir. It renders every file and
// reads the framework's modules first, and writes nothing when one of
// them fails; when a write fails, it removes what it wrote.
func New(dir string, a App) ([]string, error) {
	if !modulePath.MatchString(a.Module) || strings.Contains(a.Module, "//") {
		return nil, fmt.Errorf("new: %q is not a module path: use lower-case letters, digits and / . _ ~ -, such as github.com/acme/crm", a.Module)
	}
	existed := false
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("new: %s is not empty: choose a new folder", dir)
	} else if err == nil {
		existed = true
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("new: %w", err)
	}
	if a.FrameworkVersion == "" {
		a.FrameworkVersion = "v0.0.0"
	}
	data := map[string]string{"Module": a.Module, "Name": a.Name()}
	var files []Change
	err := fs.WalkDir(templates, "templates/new", func(file string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || file == goModTpl {
			return err
		}
		rel := strings.TrimSuffix(strings.TrimPrefix(file, "templates/new/"), ".tmpl")
		if rel == "gitignore" {
			rel = ".gitignore"
		}
		out, err := render(file, data)
		if err != nil {
			return err
		}
		if strings.HasSuffix(rel, ".go") {
			if out, err = format.Source(out); err != nil {
				return fmt.Errorf("gofmt %s: %w", rel, err)
			}
		}
		files = append(files, Change{Path: rel, Content: out})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("new: %w", err)
	}
	mod := goMod{Module: a.Module, Go: GoVersion, Direct: []string{framework + " " + a.FrameworkVersion}}
	var sum []byte
	if a.FrameworkPath != "" {
		clone, err := checkClone(a.FrameworkPath)
		if err != nil {
			return nil, err
		}
		if mod.Replace, err = replacePath(dir, clone); err != nil {
			return nil, fmt.Errorf("new: %w", err)
		}
		direct, indirect, err := requirements(clone, a.Module, files)
		if err != nil {
			return nil, err
		}
		mod.Direct, mod.Indirect = append(mod.Direct, direct...), indirect
		slices.Sort(mod.Direct)
		if sum, err = os.ReadFile(filepath.Join(clone, "go.sum")); err != nil {
			return nil, fmt.Errorf("new: %w", err)
		}
	}
	out, err := render(goModTpl, mod)
	if err != nil {
		return nil, fmt.Errorf("new: %w", err)
	}
	files = insertSorted(files, Change{Path: "go.mod", Content: out})
	if sum != nil {
		files = append(files, Change{Path: "go.sum", Content: sum})
	}
	written := make([]string, 0, len(files))
	for _, f := range files {
		if err := Write(dir, []Change{f}); err != nil {
			RemoveNew(dir, existed)
			return nil, fmt.Errorf("new: %w", err)
		}
		written = append(written, f.Path)
	}
	return written, nil
}

// RemoveNew removes what New wrote into dir: dir itself unless it
// existed before (empty, as New wants it), else what it holds.
func RemoveNew(dir string, existed bool) error {
	if !existed {
		return os.RemoveAll(dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// goModTpl is the template of a new app's go.mod, rendered from a goMod.
const goModTpl = "templates/new/go.mod.tmpl"

// goMod is what a new app's go.mod says: requirements as "PATH VERSION",
// each list sorted, as go mod tidy writes them.
type goMod struct {
	Module, Go       string
	Direct, Indirect []string
	Replace          string // the framework's clone, as go.mod writes its path
}

// insertSorted inserts c into files, sorted by template file name as
// fs.WalkDir walks them.
func insertSorted(files []Change, c Change) []Change {
	i := 0
	for i < len(files) && strings.TrimPrefix(files[i].Path, ".") < c.Path {
		i++
	}
	return slices.Insert(files, i, c)
}

// checkClone returns the absolute path of the framework's clone at dir,
// refusing a folder whose go.mod is not the framework's.
func checkClone(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("new: --framework-path: %w", err)
	}
	src, err := os.ReadFile(filepath.Join(abs, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("new: --framework-path %s holds no go.mod: give a checkout of %s", dir, framework)
	}
	if module := modfile.ModulePath(src); module != framework {
		return "", fmt.Errorf("new: --framework-path %s holds the module %s, not the framework: give a checkout of %s", dir, module, framework)
	}
	return abs, nil
}

// replacePath is how the go.mod of the app at dir names the clone:
// relative when the two share a folder below the root (../navree), so
// the pair can move together, else absolute.
func replacePath(dir, clone string) (string, error) {
	app, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	p := clone
	if top(app) == top(clone) && top(app) != "" {
		if rel, err := filepath.Rel(app, clone); err == nil {
			p = rel
			if !strings.HasPrefix(rel, "..") {
				p = "." + string(filepath.Separator) + rel
			}
		}
	}
	p = filepath.ToSlash(p)
	if strings.ContainsAny(p, " \t\"'`\\") {
		p = strconv.Quote(p)
	}
	return p, nil
}

// top is the first folder of the absolute path p, with its volume: "/work"
// of /work/navree.
func top(p string) string {
	rest := strings.TrimPrefix(p[len(filepath.VolumeName(p)):], string(filepath.Separator))
	first, _, _ := strings.Cut(rest, string(filepath.Separator))
	if first == "" {
		return ""
	}
	return filepath.VolumeName(p) + first
}

// requirements are the modules that the packages of the app's Go files
// need, and those the code of the make:* commands imports (so they add
// none, and the app still builds offline), besides the framework, at the
// versions of the framework's clone: those that provide a package the
// app imports (direct), and the others (indirect), as "PATH VERSION",
// sorted. go list in the clone finds them, fetching any the module cache
// lacks.
func requirements(clone, app string, files []Change) (direct, indirect []string, err error) {
	imports := map[string]bool{} // the app's imports: true
	for _, f := range files {
		if !strings.HasSuffix(f.Path, ".go") {
			continue
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), f.Path, f.Content, parser.ImportsOnly)
		if err != nil {
			return nil, nil, fmt.Errorf("new: %s: %w", f.Path, err)
		}
		for _, s := range parsed.Imports {
			if p, _ := strconv.Unquote(s.Path.Value); !isUnder(p, app) {
				imports[p] = true
			}
		}
	}
	generators, err := generatorImports()
	if err != nil {
		return nil, nil, fmt.Errorf("new: %w", err)
	}
	for _, p := range generators {
		imports[p] = imports[p] || false
	}
	// go mod tidy lists the modules of every platform's build: so does
	// New, of the main ones'.
	isDirect := map[string]bool{}
	for _, goos := range slices.Compact(slices.Sorted(slices.Values([]string{"darwin", "linux", "windows", runtime.GOOS}))) {
		cmd := exec.Command("go", append([]string{"list", "-deps", "-f", "{{with .Module}}{{if not .Main}}{{$.ImportPath}} {{.Path}} {{.Version}}{{end}}{{end}}"},
			slices.Sorted(maps.Keys(imports))...)...)
		cmd.Dir, cmd.Env = clone, append(os.Environ(), "GOOS="+goos)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, nil, fmt.Errorf("new: list the modules the app needs, with go list in %s: %w\n%s", clone, err, strings.TrimSpace(stderr.String()))
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if pkg, mod, ok := strings.Cut(line, " "); ok {
				isDirect[mod] = isDirect[mod] || imports[pkg]
			}
		}
	}
	for mod, d := range isDirect {
		if d {
			direct = append(direct, mod)
		} else {
			indirect = append(indirect, mod)
		}
	}
	slices.Sort(direct)
	slices.Sort(indirect)
	return direct, indirect, nil
}

// importLine is a line of a Go template that imports a package of a
// module: "\tgithub.com/navree/navree/queue\"", not "\t\"{{.Import}}\"".
var importLine = regexp.MustCompile(`(?m)^\s*(?:[a-z_]+\s+)?"([a-z0-9-]+\.[a-z.]+/[^"{}\s]+)"\s*$`)

// generatorImports are the packages the Go templates of the make:*
// commands import.
func generatorImports() ([]string, error) {
	var pkgs []string
	err := fs.WalkDir(templates, "templates", func(file string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(file, "templates/new/") || !strings.HasSuffix(file, ".go.tmpl") {
			return err
		}
		src, err := templates.ReadFile(file)
		for _, m := range importLine.FindAllSubmatch(src, -1) {
			if p := string(m[1]); !slices.Contains(pkgs, p) {
				pkgs = append(pkgs, p)
			}
		}
		return err
	})
	return pkgs, err
}

func render(file string, data any) ([]byte, error) {
	src, err := templates.ReadFile(file)
	if err != nil {
		return nil, err
	}
	t, err := template.New(path.Base(file)).Option("missingkey=error").Parse(string(src))
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
