package scaffold

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/mod/modfile"
)

// Change is a file a generator writes: created, or edited.
type Change struct {
	Path    string // relative to the app
	Content []byte
	Edited  bool // an existing file, edited
}

// The anchors: the line of modules/modules.go above which the make:*
// commands add a new module, and the line of a module.go above which
// make:job adds its registrations (each generator has its own).
const (
	modulesAnchor = "// navree:modules"
	jobsAnchor    = "// navree:jobs"
)

const (
	framework   = "github.com/navree/navree"
	queuePkg    = framework + "/queue"
	modulesGo   = "modules/modules.go" // the app's list of modules, which main.go and the tests build
	moduleGoTpl = "templates/module/module.go.tmpl"
)

var snake = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// taken are the names a new module may not have: the packages main.go,
// modules/modules.go and the generated code import by these names, which
// the module's would shadow, and main.
var taken = []string{"app", "apptest", "config", "context", "dashboard", "db", "embed", "errors", "events", "eventstest", "fx",
	"mail", "mailtest", "main", "modules", "notify", "notifytest", "queue", "queuetest", "schedule", "testing"}

// checkName refuses what is not a Go identifier in lower snake case, or
// is a keyword. what is "module" or "name", example a name that is one.
func checkName(cmd, what, name, example string) error {
	if !snake.MatchString(name) || token.IsKeyword(name) {
		return fmt.Errorf("%s: the %s %q must be a Go identifier in lower snake case, not a keyword, such as %s", cmd, what, name, example)
	}
	return nil
}

// plan is what a generator is about to write into the app at dir: the
// files it creates, and the module's module.go as edited so far.
type plan struct {
	cmd     string // the command, such as "make:job", for errors
	dir     string
	app     string // the app's module path
	module  string // the module's folder and package name
	changes []Change

	modFile    string // module/module.go, relative to the app
	modSrc     []byte // its text, edited so far (unformatted)
	modOrig    []byte // its text as read, when it exists
	modExisted bool
	decls      map[string]string // a top-level name of the module's package (tests apart) -> its file
	testDecls  map[string]string // the same of its external test package
}

// newPlan reads the app at dir and the module's module.go, or the one
// make:module writes when it has none. example is a module name and a
// name the command takes, for errors.
func newPlan(cmd, dir, module, name string, example [2]string) (*plan, error) {
	if err := checkName(cmd, "module", module, example[0]); err != nil {
		return nil, err
	}
	if name != "" {
		if err := checkName(cmd, "name", name, example[1]); err != nil {
			return nil, err
		}
	}
	app, err := readModulePath(cmd, dir)
	if err != nil {
		return nil, err
	}
	p := &plan{cmd: cmd, dir: dir, app: app, module: module, modFile: module + "/module.go"}
	switch p.modSrc, err = os.ReadFile(filepath.Join(dir, p.modFile)); {
	case err == nil:
		p.modExisted, p.modOrig = true, p.modSrc
	case errors.Is(err, os.ErrNotExist):
		if slices.Contains(taken, module) {
			other := module + "s"
			if strings.HasSuffix(module, "s") {
				other = "app_" + module
			}
			return nil, fmt.Errorf("%s: a module named %s would shadow the package %s that the app or the generated code imports: choose another name, such as %s", cmd, module, module, other)
		}
		// gofmt'ed with the insertions, by done. The module's name is on
		// a line of its own: gofmt would move the anchors out of a call
		// fx.Module("NAME", with nothing else in it yet.
		if p.modSrc, err = render(moduleGoTpl, map[string]string{"Package": module}); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	if p.decls, p.testDecls, err = declarations(dir, module); err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	// A package that declares Module in another file is a module whose
	// registrations the commands cannot reach: a second Module, in a new
	// module.go, would not build.
	if file, ok := p.decls["Module"]; ok && !p.modExisted {
		if cmd == "make:module" {
			return nil, fmt.Errorf("%s: %s declares Module already: the module %s exists (for the make:* commands to add to it, move Module to %s)", cmd, file, module, p.modFile)
		}
		return nil, fmt.Errorf("%s: %s declares Module already: move it to %s, with the line %q in its fx.Module to add the %s above, then run the command again",
			cmd, file, p.modFile, anchorOf[cmd][0], anchorOf[cmd][1])
	}
	return p, nil
}

// anchorOf is the line of module.go each command adds above, and what it
// adds.
var anchorOf = map[string][2]string{"make:job": {jobsAnchor, "job"}, "make:listener": {listenersAnchor, "listener"},
	"make:notification": {notificationsAnchor, "notification"}, "make:mail": {mailAnchor, "mail templates and preview"}}

// free refuses a name the module's package, or with test set its test
// package, already declares.
func (p *plan) free(test bool, names ...string) error {
	decls := p.decls
	if test {
		decls = p.testDecls
	}
	for _, n := range names {
		if file, ok := decls[n]; ok {
			return fmt.Errorf("%s: %s declares %s already: choose another name, or rename it there", p.cmd, file, n)
		}
	}
	return nil
}

// modulesImport is the import path of the app's package modules, which
// the generated tests build the app of.
func (p *plan) modulesImport() string { return p.app + "/" + path.Dir(modulesGo) }

// create plans the file rel, rendered from tmpl with data (gofmt'ed if a
// Go file), refusing a file that exists.
func (p *plan) create(rel, tmpl string, data any) error {
	if fileExists(filepath.Join(p.dir, filepath.FromSlash(rel))) {
		return fmt.Errorf("%s: %s exists: choose another name, or remove it", p.cmd, rel)
	}
	out, err := render(tmpl, data)
	if err != nil {
		return err
	}
	if strings.HasSuffix(rel, ".go") {
		if out, err = format.Source(out); err != nil {
			return fmt.Errorf("%s: gofmt %s: %w", p.cmd, rel, err)
		}
	}
	p.changes = append(p.changes, Change{Path: rel, Content: out})
	return nil
}

// register adds line to module.go above anchor, and the imports it
// needs ("" for none). what names the registration for the error of a
// module.go without the anchor, which says what to add by hand.
func (p *plan) register(anchor, line, what string, importPaths ...string) error {
	edited, ok := insertAbove(p.modSrc, anchor, line)
	if !ok {
		hand := ""
		for _, ip := range importPaths {
			if ip != "" && !imports(p.modSrc, ip) {
				hand += fmt.Sprintf(", and import %q", ip)
			}
		}
		return fmt.Errorf("%s: %s has no line %q to add the %s above: add %s to its fx.Module by hand%s", p.cmd, p.modFile, anchor, what, line, hand)
	}
	for _, ip := range importPaths {
		if ip == "" {
			continue
		}
		var err error
		if edited, err = addImport(edited, ip, p.app); err != nil {
			return fmt.Errorf("%s: %s: %w", p.cmd, p.modFile, err)
		}
	}
	p.modSrc = edited
	return nil
}

// done returns the changes: the files created, module.go, and
// modules/modules.go when the module is new and modules.go has the line
// to add it above. Without the line, the module is left for Hints to
// tell about.
func (p *plan) done() ([]Change, error) {
	mod, err := format.Source(p.modSrc)
	if err != nil {
		return nil, fmt.Errorf("%s: gofmt %s: %w", p.cmd, p.modFile, err)
	}
	changes := p.changes
	if p.modExisted {
		if !bytes.Equal(mod, p.modOrig) { // make:mail of a module with its templates given already leaves it
			changes = append(changes, Change{Path: p.modFile, Content: mod, Edited: true})
		}
		return changes, nil
	}
	changes = append(changes, Change{Path: p.modFile, Content: mod})
	src, err := os.ReadFile(filepath.Join(p.dir, filepath.FromSlash(modulesGo)))
	if err != nil {
		return changes, nil
	}
	edited, ok := insertAbove(src, modulesAnchor, p.module+".Module,")
	if !ok {
		return changes, nil
	}
	if edited, err = addImport(edited, p.app+"/"+p.module, p.app); err == nil {
		edited, err = format.Source(edited)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", p.cmd, modulesGo, err)
	}
	return append(changes, Change{Path: modulesGo, Content: edited, Edited: true}), nil
}

// Hints are what is left to do by hand once changes are written into the
// app at dir: a module made without modules/modules.go listing it (it has
// no line "// navree:modules") is to be added to the app's modules.
func Hints(dir string, changes []Change) []string {
	var hints []string
	for _, c := range changes {
		if c.Path == modulesGo {
			return nil
		}
	}
	for _, c := range changes {
		module, ok := strings.CutSuffix(c.Path, "/module.go")
		if !ok || c.Edited || strings.Contains(module, "/") {
			continue
		}
		app, err := readModulePath("", dir)
		if err != nil {
			app = "YOUR_MODULE_PATH"
		}
		where := fmt.Sprintf("%s has no line %q to add the module above", modulesGo, modulesAnchor)
		if !fileExists(filepath.Join(dir, filepath.FromSlash(modulesGo))) {
			where = "this app has no " + modulesGo + " to add the module to"
		}
		hints = append(hints, fmt.Sprintf("The module %s is new, and %s: add %s.Module to the app's modules by hand, and import %q.", module, where, module, app+"/"+module))
	}
	return hints
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
	for _, text := range strings.SplitAfter(string(src), "\n") {
		if !found && strings.Contains(text, anchor) {
			indent := text[:len(text)-len(strings.TrimLeft(text, " \t"))]
			out.WriteString(indent + line + "\n")
			found = true
		}
		out.WriteString(text)
	}
	return out.Bytes(), found
}

// imports reports whether the Go file src imports importPath.
func imports(src []byte, importPath string) bool {
	f, err := parser.ParseFile(token.NewFileSet(), "", src, parser.ImportsOnly)
	if err != nil {
		return false
	}
	for _, s := range f.Imports {
		if p, _ := strconv.Unquote(s.Path.Value); p == importPath {
			return true
		}
	}
	return false
}

// addImport adds the import of importPath to the Go file src unless it
// has it: at the end of its last import block, whose last group gofmt
// then sorts it into. An import of the app's own packages (under app/)
// makes a group of its own after the others, unless the last is one. It
// splices that one line in rather than print the file anew from its
// syntax tree (as x/tools' astutil.AddImport and go/printer would), so
// the rest of the user's file stays byte for byte as it was.
func addImport(src []byte, importPath, app string) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.ImportsOnly)
	if err != nil {
		return nil, fmt.Errorf("it does not parse (%v): fix it, then run the command again", err)
	}
	if imports(src, importPath) {
		return src, nil
	}
	spec := strconv.Quote(importPath)
	var last *ast.GenDecl
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
			last = g
		}
	}
	var out []byte
	switch {
	case last == nil: // after the package clause
		at := fset.Position(f.Name.End()).Offset
		out = append(append(append(out, src[:at]...), "\n\nimport "+spec...), src[at:]...)
	case last.Lparen.IsValid(): // on a line of its own above the closing parenthesis
		at := fset.Position(last.Rparen).Offset
		at = bytes.LastIndexByte(src[:at], '\n') + 1
		line := "\t" + spec + "\n"
		if lastSpec, _ := strconv.Unquote(last.Specs[len(last.Specs)-1].(*ast.ImportSpec).Path.Value); isUnder(importPath, app) && !isUnder(lastSpec, app) {
			line = "\n" + line
		}
		out = append(append(append(out, src[:at]...), line...), src[at:]...)
	default: // import "x" becomes a block
		from, to := fset.Position(last.Pos()).Offset, fset.Position(last.End()).Offset
		old := src[fset.Position(last.Specs[0].Pos()).Offset:to]
		sep := "\n\t"
		if oldPath, _ := strconv.Unquote(last.Specs[0].(*ast.ImportSpec).Path.Value); isUnder(importPath, app) && !isUnder(oldPath, app) {
			sep = "\n\n\t"
		}
		out = append(append(append(out, src[:from]...), "import (\n\t"+string(old)+sep+spec+"\n)"...), src[to:]...)
	}
	return out, nil
}

// parseGo parses file, a Go file of module, named module/FILE in its
// errors.
func parseGo(module, file string) (*ast.File, string, error) {
	rel := module + "/" + filepath.Base(file)
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, rel, err
	}
	f, err := parser.ParseFile(token.NewFileSet(), rel, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, rel, fmt.Errorf("%s does not parse (%v): fix it, then run the command again", rel, err)
	}
	return f, rel, nil
}

// isUnder reports whether importPath is the package app or one of its.
func isUnder(importPath, app string) bool {
	return app != "" && (importPath == app || strings.HasPrefix(importPath, app+"/"))
}

// declarations are the top-level names the Go files of the package in
// dir/module declare, each with its file: those of the package, and
// those of its external test package (package module_test).
func declarations(dir, module string) (pkg, test map[string]string, err error) {
	pkg, test = map[string]string{}, map[string]string{}
	files, _ := filepath.Glob(filepath.Join(dir, module, "*.go"))
	for _, file := range files {
		f, rel, err := parseGo(module, file)
		if err != nil {
			return nil, nil, err
		}
		decls := pkg
		if strings.HasSuffix(f.Name.Name, "_test") {
			decls = test
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					decls[d.Name.Name] = rel
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						decls[s.Name.Name] = rel
					case *ast.ValueSpec:
						for _, n := range s.Names {
							decls[n.Name] = rel
						}
					}
				}
			}
		}
	}
	return pkg, test, nil
}

// readModulePath is the module path of the app at dir, from its go.mod.
func readModulePath(cmd, dir string) (string, error) {
	src, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("%s: this folder holds no app (no go.mod): run it in an app, or make one with navree new", cmd)
	}
	if module := modfile.ModulePath(src); module != "" {
		return module, nil
	}
	return "", fmt.Errorf("%s: go.mod has no module line", cmd)
}

// camel is the exported Go name of a snake-case name, each word
// capitalized, and an initialism all in capitals, as Go spells it:
// sync_calendar is SyncCalendar, push_to_crm PushToCRM, user_ids UserIDs.
func camel(s string) string {
	var b strings.Builder
	for _, word := range strings.Split(s, "_") {
		c, _ := initialism(word)
		b.WriteString(c)
	}
	return b.String()
}

// lowerCamel is the unexported Go name of a snake-case name: camel's,
// with its first word in lower case (an initialism all of it):
// sync_calendar is syncCalendar, url_sync urlSync, http_api httpAPI.
func lowerCamel(s string) string {
	first, rest, _ := strings.Cut(s, "_")
	return strings.ToLower(first) + camel(rest)
}

// initialism is word capitalized: all in capitals when it is one of
// initialisms, or one of them and a plural s (ids is IDs), and then ok;
// else its first letter.
func initialism(word string) (capitalized string, ok bool) {
	if word == "" {
		return "", false
	}
	if initialisms[strings.ToUpper(word)] {
		return strings.ToUpper(word), true
	}
	if stem, plural := strings.CutSuffix(word, "s"); plural && initialisms[strings.ToUpper(stem)] {
		return strings.ToUpper(stem) + "s", true
	}
	r := []rune(word)
	return string(unicode.ToUpper(r[0])) + string(r[1:]), false
}

// initialisms are the words Go names spell all in capitals: staticcheck's
// list (ST1003, golint's and more), and the CRM, CSV, PDF and SMS that a
// web app's jobs name.
var initialisms = map[string]bool{
	"ACL": true, "AMQP": true, "API": true, "ASCII": true, "CPU": true, "CSS": true, "DB": true, "DNS": true, "EOF": true,
	"GID": true, "GUID": true, "HTML": true, "HTTP": true, "HTTPS": true, "ID": true, "IP": true, "JSON": true, "QPS": true,
	"RAM": true, "RPC": true, "RTP": true, "SIP": true, "SLA": true, "SMTP": true, "SQL": true, "SSH": true, "TCP": true,
	"TLS": true, "TS": true, "TTL": true, "UDP": true, "UI": true, "UID": true, "URI": true, "URL": true, "UTF8": true,
	"UUID": true, "VM": true, "XML": true, "XMPP": true, "XSRF": true, "XSS": true,
	"CRM": true, "CSV": true, "PDF": true, "SMS": true,
}

func fileExists(file string) bool {
	_, err := os.Stat(file)
	return err == nil
}
