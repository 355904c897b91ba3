// Package docs holds the user documentation. Its test builds every Go
// snippet of README.md and docs/*.md against the framework, so that no
// page shows code that does not compile.
package docs

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// A snippet is a ```go block of a page.
type snippet struct {
	page string // README.md, docs/queues.md
	line int    // of its first line of code
	code string
}

func snippets(t *testing.T) []snippet {
	t.Helper()
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{"../README.md"}, pages...)
	block := regexp.MustCompile("(?ms)^```go\n(.*?)^```")
	var out []snippet
	for _, page := range pages {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range block.FindAllSubmatchIndex(text, -1) {
			out = append(out, snippet{
				page: strings.TrimPrefix(filepath.ToSlash(filepath.Join("docs", page)), "docs/../"),
				line: bytes.Count(text[:m[2]], []byte("\n")) + 1,
				code: string(text[m[2]:m[3]]),
			})
		}
	}
	return out
}

// imports are the packages a snippet may use by their names.
var imports = map[string]string{
	"app": "github.com/navree/navree/app", "config": "github.com/navree/navree/config", "db": "github.com/navree/navree/db",
	"dbtest": "github.com/navree/navree/db/dbtest", "queue": "github.com/navree/navree/queue",
	"queuetest": "github.com/navree/navree/queue/queuetest", "dashboard": "github.com/navree/navree/queue/dashboard",
	"mail": "github.com/navree/navree/mail", "mailtest": "github.com/navree/navree/mail/mailtest",
	"events": "github.com/navree/navree/events", "eventstest": "github.com/navree/navree/events/eventstest",
	"notify": "github.com/navree/navree/notify", "notifytest": "github.com/navree/navree/notify/notifytest",
	"schedule": "github.com/navree/navree/schedule", "apptest": "github.com/navree/navree/testing/apptest",
	"migrations": "github.com/navree/navree/migrations",
	"fx":         "go.uber.org/fx", "cli": "github.com/urfave/cli/v2", "uuid": "github.com/gofrs/uuid/v5", "bun": "github.com/uptrace/bun",
	"context": "context", "errors": "errors", "fmt": "fmt", "time": "time", "strings": "strings", "testing": "testing",
	"http": "net/http", "httptest": "net/http/httptest", "json": "encoding/json", "slog": "log/slog", "sql": "database/sql",
	"fs": "io/fs", "embed": "embed", "os": "os", "runtime": "runtime", "io": "io", "tls": "crypto/tls", "slices": "slices", "strconv": "strconv",
	"sync": "sync", "template": "html/template",
	"metric": "go.opentelemetry.io/otel/metric", "sdkmetric": "go.opentelemetry.io/otel/sdk/metric", "metrics": "github.com/navree/navree/app/metrics",
	"trace": "go.opentelemetry.io/otel/trace", "sdktrace": "go.opentelemetry.io/otel/sdk/trace",
	// The app the pages build: its packages, in appPackages.
	"contacts": "github.com/acme/crm/contacts", "crm": "github.com/acme/crm/crm", "reports": "github.com/acme/crm/reports",
}

// appPackages are the packages of the CRM the pages build, as far as
// they use one another's: each page shows one package, and names the
// others'.
var appPackages = map[string]string{
	"contacts": `package contacts

import "go.uber.org/fx"

type Export struct {
	CompanyID string ` + "`json:\"company_id\"`" + `
}

func (Export) JobName() string { return "contacts.export" }

var Module = fx.Module("contacts")
`,
	"crm": `package crm

import "go.uber.org/fx"

var Module = fx.Module("crm")
`,
	"reports": `package reports

import "go.uber.org/fx"

var Module = fx.Module("reports")
`,
}

// bodyParams are the names a snippet of statements finds declared: what
// the code around it would have (a test's t, a handler's ctx, the app's
// services it was given).
const bodyParams = `ctx context.Context, t *testing.T, w http.ResponseWriter, r *http.Request, c *cli.Context,
	q *queue.Queue, in *queue.Inspector, d *db.DB, mailer *mail.Mailer, notifier *notify.Notifier, inbox *notify.Inbox, bus *events.Bus,
	s *schedule.Scheduler, a *apptest.App, clock *apptest.Clock, uow *db.UnitOfWork`

// TestEverySnippetCompiles builds each snippet as a package of its own:
// a snippet of declarations as a file, one of statements as the body of
// a function that declares bodyParams, a list of fx options as the
// arguments of fx.Options. The declarations a page leaves to the
// reader's app are in context (only those the snippet does not declare
// itself). Errors of unused variables and imports are not counted: a
// snippet shows a step, not a whole program.
func TestEverySnippetCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every snippet of the docs: -short skips it")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) {
		t.Helper()
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module github.com/acme/crm\n\ngo 1.26\n\nrequire github.com/navree/navree v0.0.0\n\nreplace github.com/navree/navree => "+filepath.ToSlash(root)+"\n")
	write("go.sum", string(sum))
	for name, src := range appPackages {
		write(name+"/"+name+".go", src)
	}
	all := snippets(t)
	where := map[string]snippet{} // package folder -> snippet
	for i, s := range all {
		pkg := fmt.Sprintf("s%03d", i)
		src, err := file(s)
		if err != nil {
			t.Errorf("%s:%d: %v", s.page, s.line, err)
			continue
		}
		write(pkg+"/snippet.go", src)
		for _, m := range embedded.FindAllStringSubmatch(src, -1) {
			for _, pattern := range strings.Fields(m[1]) { // a file for each pattern to match
				write(pkg+"/"+strings.ReplaceAll(pattern, "*", "x")+map[bool]string{true: "/x.txt"}[!strings.Contains(path.Base(pattern), ".")], "")
			}
		}
		where[pkg] = s
	}
	cmd := exec.Command("go", "build", "-gcflags=-e", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	out, _ := cmd.CombinedOutput()
	if offline.Match(out) {
		t.Skipf("the snippets need modules that are not in the module cache, and the network to fetch them is not there:\n%s", out)
	}
	failed := map[string][]string{}
	last := "build"
	for _, line := range strings.Split(string(out), "\n") {
		m := regexp.MustCompile(`^(s\d{3})/snippet\.go:(\d+):\d+: (.*)$`).FindStringSubmatch(line)
		switch {
		case strings.HasPrefix(line, "\t") && len(failed[last]) > 0: // more of the error above
			failed[last][len(failed[last])-1] += "\n\t" + line
		case m == nil:
			if line != "" && !strings.HasPrefix(line, "#") {
				failed["build"] = append(failed["build"], line)
			}
		case strings.Contains(m[3], "declared and not used"), strings.Contains(m[3], "imported and not used"):
		default:
			last = m[1]
			failed[m[1]] = append(failed[m[1]], "line "+m[2]+" of the built file: "+m[3])
		}
	}
	if lines := failed["build"]; len(lines) > 0 {
		t.Fatalf("go build of the snippets:\n%s", strings.Join(lines, "\n"))
	}
	var pkgs []string
	for pkg := range failed {
		pkgs = append(pkgs, pkg)
	}
	slices.Sort(pkgs)
	for _, pkg := range pkgs {
		s := where[pkg]
		src, _ := os.ReadFile(filepath.Join(dir, pkg, "snippet.go"))
		t.Errorf("%s:%d: the snippet does not compile:\n\t%s\nas built:\n%s", s.page, s.line, strings.Join(failed[pkg], "\n\t"), numbered(string(src)))
	}
	t.Logf("%d snippets built", len(all))
}

func numbered(src string) string {
	var b strings.Builder
	for i, l := range strings.Split(src, "\n") {
		fmt.Fprintf(&b, "%4d  %s\n", i+1, l)
	}
	return b.String()
}

// file is the Go file that holds s: its code in the first form that
// parses, with the imports of the names it uses and the page's context.
func file(s snippet) (string, error) {
	code := s.code
	if strings.HasPrefix(strings.TrimSpace(code), "package ") {
		return code, nil
	}
	forms := []struct{ head, tail string }{
		{"", ""}, // declarations
		{"func _(" + paramsFor(code) + ")" + results(code) + " {\n", "\n" + returns(code) + "}\n"}, // statements
		{"var _ = fx.Options(\n", "\n)\n"}, // options of a module
		{"type _ struct {\n", "\n}\n"},     // fields of a struct
		{"var _ = []any{\n", "\n}\n"},      // other expressions
	}
	for _, form := range forms {
		body := form.head + code + form.tail
		if _, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+body, 0); err != nil {
			continue
		}
		return "package p\n\n" + importsOf(body+contextOf(s.page, body)) + "\n" + body + "\n" + contextOf(s.page, body), nil
	}
	_, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+code, 0)
	return "", fmt.Errorf("the snippet parses as no Go (declarations, statements, options or fields): %v", err)
}

// paramsFor is bodyParams without those code declares itself with :=
// in its outermost block.
func paramsFor(code string) string {
	f, err := parser.ParseFile(token.NewFileSet(), "", "package p\nfunc _() {\n"+code+"\n}", 0)
	if err != nil {
		return bodyParams
	}
	defined := map[string]bool{}
	for _, st := range f.Decls[0].(*ast.FuncDecl).Body.List {
		if as, ok := st.(*ast.AssignStmt); ok && as.Tok == token.DEFINE {
			for _, e := range as.Lhs {
				if id, ok := e.(*ast.Ident); ok {
					defined[id.Name] = true
				}
			}
		}
	}
	var kept []string
	for _, p := range strings.Split(bodyParams, ",") {
		if name := strings.Fields(p)[0]; !defined[name] {
			kept = append(kept, strings.TrimSpace(p))
		}
	}
	return strings.Join(kept, ", ")
}

// returnsValue tells statements that return a value, an error: the
// body of a function that returns one.
var returnsValue = regexp.MustCompile(`(?m)\breturn\s+[^\s}]`)

func results(code string) string {
	if returnsValue.MatchString(code) {
		return " error"
	}
	return ""
}

func returns(code string) string {
	if returnsValue.MatchString(code) {
		return "return nil\n"
	}
	return ""
}

// offline matches go's errors of a module it could not fetch.
var offline = regexp.MustCompile(`(?m)(dial tcp|no such host|module lookup disabled|connection refused|i/o timeout).*$`)

var embedded = regexp.MustCompile(`(?m)^//go:embed (.*)$`)

var selector = regexp.MustCompile(`\b([a-z][a-z0-9]*)\.[A-Za-z_]`)

// importsOf is the import declaration of the known packages src names.
func importsOf(src string) string {
	seen := map[string]bool{}
	var lines []string
	for _, m := range selector.FindAllStringSubmatch(src, -1) {
		if path, ok := imports[m[1]]; ok && !seen[m[1]] {
			seen[m[1]] = true
			lines = append(lines, "\t"+m[1]+" "+strconv.Quote(path))
		}
	}
	slices.Sort(lines)
	if len(lines) == 0 {
		return ""
	}
	return "import (\n" + strings.Join(lines, "\n") + "\n)\n"
}

// contextOf is the page's context without the declarations body makes.
func contextOf(page, body string) string {
	ctxSrc, ok := pageContext[page]
	if !ok || strings.TrimSpace(ctxSrc) == "" {
		return ""
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", "package p\n"+ctxSrc, parser.ParseComments)
	if err != nil {
		panic(fmt.Sprintf("the context of %s does not parse: %v", page, err))
	}
	declared := map[string]bool{}
	if g, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+body, 0); err == nil {
		for name := range declaredIn(g) {
			declared[name] = true
		}
	}
	var b bytes.Buffer
	for _, d := range f.Decls {
		keep := true
		for name := range declaredIn(&ast.File{Decls: []ast.Decl{d}}) {
			if declared[name] {
				keep = false
			}
		}
		if keep {
			printer.Fprint(&b, fset, d)
			b.WriteString("\n\n")
		}
	}
	return "// The page's context.\n\n" + b.String()
}

// declaredIn names the top-level declarations of f: types, functions,
// variables, constants, and methods as TYPE.METHOD.
func declaredIn(f *ast.File) map[string]bool {
	names := map[string]bool{}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			name := d.Name.Name
			if d.Recv != nil && len(d.Recv.List) == 1 {
				name = recvType(d.Recv.List[0].Type) + "." + name
			}
			names[name] = true
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch spec := spec.(type) {
				case *ast.TypeSpec:
					names[spec.Name.Name] = true
				case *ast.ValueSpec:
					for _, n := range spec.Names {
						names[n.Name] = true
					}
				}
			}
		}
	}
	return names
}

func recvType(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return recvType(e.X)
	case *ast.Ident:
		return e.Name
	case *ast.IndexExpr:
		return recvType(e.X)
	}
	return ""
}
