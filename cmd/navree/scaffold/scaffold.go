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
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"
)

//go:embed templates
var templates embed.FS

// App says what New writes.
type App struct {
	// Module is the new app's module path, such as github.com/acme/crm.
	Module string
	// FrameworkPath, when set, is a checkout of the framework the app
	// builds against (a replace directive, and its go.sum copied), so it
	// builds offline.
	FrameworkPath string
	// FrameworkVersion is the framework's version the app requires;
	// v0.0.0 with FrameworkPath.
	FrameworkVersion string
}

// Name is the app's command name: the last element of its module path.
func (a App) Name() string { return path.Base(a.Module) }

var modulePath = regexp.MustCompile(`^[a-z0-9]([a-z0-9._~/-]*[a-z0-9])?$`)

// New writes the app a into dir, which must not exist or be empty, and
// returns the files it wrote, relative to dir.
func New(dir string, a App) ([]string, error) {
	if !modulePath.MatchString(a.Module) || strings.Contains(a.Module, "//") {
		return nil, fmt.Errorf("new: %q is not a module path: use lower-case letters, digits and / . _ ~ -, such as github.com/acme/crm", a.Module)
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("new: %s is not empty: choose a new folder", dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("new: %w", err)
	}
	if a.FrameworkPath != "" {
		abs, err := filepath.Abs(a.FrameworkPath)
		if err != nil {
			return nil, fmt.Errorf("new: --framework-path: %w", err)
		}
		if _, err := os.Stat(filepath.Join(abs, "go.mod")); err != nil {
			return nil, fmt.Errorf("new: --framework-path %s holds no go.mod: give a checkout of github.com/navree/navree", a.FrameworkPath)
		}
		a.FrameworkPath = filepath.ToSlash(abs)
		if a.FrameworkVersion == "" {
			a.FrameworkVersion = "v0.0.0"
		}
	}
	if a.FrameworkVersion == "" {
		a.FrameworkVersion = "latest"
	}
	data := map[string]string{"Module": a.Module, "Name": a.Name(), "FrameworkPath": a.FrameworkPath, "FrameworkVersion": a.FrameworkVersion}
	var written []string
	err := fs.WalkDir(templates, "templates/new", func(file string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
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
		target := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		written = append(written, rel)
		return os.WriteFile(target, out, 0o644)
	})
	if err == nil && a.FrameworkPath != "" {
		var sum []byte
		if sum, err = os.ReadFile(filepath.Join(filepath.FromSlash(a.FrameworkPath), "go.sum")); err == nil {
			err = os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644)
			written = append(written, "go.sum")
		}
	}
	if err != nil {
		return nil, fmt.Errorf("new: %w", err)
	}
	return written, nil
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
