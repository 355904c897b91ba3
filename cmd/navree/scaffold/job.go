package scaffold

import (
	"bufio"
	"bytes"
	"fmt"
	"go/format"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// Change is a file a generator writes: created, or edited.
type Change struct {
	Path    string // relative to the app
	Content []byte
	Edited  bool // an existing file, edited
}

// jobsAnchor is the line of a module.go above which make:job adds its
// registrations.
const jobsAnchor = "// navree:jobs"

var snake = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// MakeJob plans the job NAME of the module MODULE in the app at dir: the
// files MODULE/NAME.go and MODULE/NAME_test.go, and the registration in
// MODULE/module.go (made when missing). It writes nothing: see Write. It
// refuses a name that is not a Go identifier in snake case or is a
// keyword, a file that exists, and a module.go without the anchor line.
func MakeJob(dir, module, name string) ([]Change, error) {
	for _, v := range [][2]string{{"module", module}, {"name", name}} {
		if !snake.MatchString(v[1]) || token.IsKeyword(v[1]) {
			return nil, fmt.Errorf("make:job: the %s %q must be a Go identifier in lower snake case, not a keyword, such as contacts or export", v[0], v[1])
		}
	}
	appModule, err := readModulePath(dir)
	if err != nil {
		return nil, err
	}
	typ := camel(name)
	data := map[string]string{"Package": module, "Type": typ, "Handler": lowerFirst(typ) + "Handler",
		"JobName": module + "." + name, "Import": appModule + "/" + module}
	var changes []Change
	for _, f := range [][2]string{{name + ".go", "templates/job/job.go.tmpl"}, {name + "_test.go", "templates/job/job_test.go.tmpl"}} {
		file, tmpl := f[0], f[1]
		rel := filepath.ToSlash(filepath.Join(module, file))
		if _, err := os.Stat(filepath.Join(dir, rel)); err == nil {
			return nil, fmt.Errorf("make:job: %s exists: choose another name, or remove it", rel)
		}
		out, err := renderGo(tmpl, data)
		if err != nil {
			return nil, err
		}
		changes = append(changes, Change{Path: rel, Content: out})
	}
	registration := fmt.Sprintf("queue.Register[%s](new%sHandler),", typ, typ)
	modFile := filepath.ToSlash(filepath.Join(module, "module.go"))
	existed := fileExists(filepath.Join(dir, modFile))
	src, err := os.ReadFile(filepath.Join(dir, modFile))
	switch {
	case os.IsNotExist(err):
		// Formatted after the insertion: gofmt would move the anchor out of
		// an fx.Module call that has no other argument yet.
		if src, err = render("templates/job/module.go.tmpl", data); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, fmt.Errorf("make:job: %w", err)
	}
	edited, ok := insertAbove(src, jobsAnchor, registration)
	if !ok {
		return nil, fmt.Errorf("make:job: %s has no line %q to add the job above: add %s to its fx.Module by hand", modFile, jobsAnchor, registration)
	}
	if edited, err = format.Source(edited); err != nil {
		return nil, fmt.Errorf("make:job: gofmt %s: %w", modFile, err)
	}
	return append(changes, Change{Path: modFile, Content: edited, Edited: existed}), nil
}

// Write writes the changes into dir.
func Write(dir string, changes []Change) error {
	for _, c := range changes {
		path := filepath.Join(dir, filepath.FromSlash(c.Path))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, c.Content, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// insertAbove inserts line above the line of src holding anchor, indented
// as it is.
func insertAbove(src []byte, anchor, line string) ([]byte, bool) {
	var out bytes.Buffer
	found := false
	sc := bufio.NewScanner(bytes.NewReader(src))
	for sc.Scan() {
		text := sc.Text()
		if !found && strings.Contains(text, anchor) {
			indent := text[:len(text)-len(strings.TrimLeft(text, " \t"))]
			out.WriteString(indent + line + "\n")
			found = true
		}
		out.WriteString(text + "\n")
	}
	return out.Bytes(), found
}

// readModulePath is the module path of the app at dir, from its go.mod.
func readModulePath(dir string) (string, error) {
	src, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("make:job: this folder holds no app (no go.mod): run it in an app, or make one with navree new")
	}
	for _, line := range strings.Split(string(src), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`), nil
		}
	}
	return "", fmt.Errorf("make:job: go.mod has no module line")
}

func renderGo(tmpl string, data any) ([]byte, error) {
	out, err := render(tmpl, data)
	if err != nil {
		return nil, err
	}
	return format.Source(out)
}

func camel(s string) string {
	var b strings.Builder
	for _, part := range strings.Split(s, "_") {
		if part != "" {
			r := []rune(part)
			b.WriteString(string(unicode.ToUpper(r[0])) + string(r[1:]))
		}
	}
	return b.String()
}

func lowerFirst(s string) string {
	r := []rune(s)
	return string(unicode.ToLower(r[0])) + string(r[1:])
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
