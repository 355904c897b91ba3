package scaffold

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

const dbPkg = framework + "/db"

// frameworkSets are the migration sets of the framework's modules: a
// module of the app of one of these names would add a second set of the
// name, which migrate refuses.
var frameworkSets = []string{"notifications", "queue", "schedule"}

// MakeMigration plans the migration NAME of the module MODULE in the app
// at dir, the next of the module's migration set, the SQL files of
// MODULE/migrations/ (the set named MODULE): VERSION_NAME.up.sql and
// VERSION_NAME.down.sql, VERSION the set's highest plus one (0001 for the
// first). A NAME create_TABLE gets the table: its up file one for each
// database, .up.sqlite.sql and .up.postgres.sql, as their ids differ, and
// a down file that drops it. The module's first migration also plans
// MODULE/migrations.go (an embed.FS of the folder), MODULE/migrations_test.go
// (it applies the app's migrations, rolls them back and applies them
// again, on SQLite and on PostgreSQL), and db.Migrations of the set in
// MODULE/module.go, after Module's last registration (module.go made when
// missing, and then added to modules/modules.go). It writes nothing: see
// Write. Besides make:job's refusals, it refuses a name the set has a
// migration of, a module named after a set of the framework, and a
// module that adds a migration set from another folder.
func MakeMigration(dir, module, name string) ([]Change, error) {
	const cmd = "make:migration"
	p, err := newAddPlan(cmd, dir, module, name, [2]string{"contacts", "create_contacts"}, "migration set")
	if err != nil {
		return nil, err
	}
	if slices.Contains(frameworkSets, module) {
		return nil, fmt.Errorf("%s: the framework has a migration set named %s, the name of %s's set (migrate refuses two sets of one name): put the migration in a module of another name", cmd, module, module)
	}
	set := module + "/migrations"
	hasSet := calls(dir, module, p.modSrc, "db.Migrations(")
	if hasSet && !fileExists(filepath.Join(dir, filepath.FromSlash(set))) {
		return nil, fmt.Errorf("%s: %s adds a migration set already, from another folder than %s/: write the migration's files into that folder by hand", cmd, module, set)
	}
	last := 0
	files, _ := filepath.Glob(filepath.Join(dir, filepath.FromSlash(set), "*.sql"))
	for _, f := range files {
		base := filepath.Base(f)
		version, rest, _ := strings.Cut(base, "_")
		n, err := strconv.Atoi(version)
		if err != nil {
			continue
		}
		last = max(last, n)
		if migration, _, _ := strings.Cut(rest, "."); migration == name {
			return nil, fmt.Errorf("%s: %s/%s is a migration %s already: choose another name", cmd, set, base, name)
		}
	}
	full := fmt.Sprintf("%04d_%s", last+1, name)
	table, create := strings.CutPrefix(name, "create_")
	data := map[string]string{"Package": module, "Set": module, "Name": full, "Table": table, "Modules": p.modulesImport()}
	sql := [][2]string{{".up.sql", "templates/migration/up.sql.tmpl"}, {".down.sql", "templates/migration/down.sql.tmpl"}}
	if create && table != "" {
		sql = [][2]string{{".up.postgres.sql", "templates/migration/create.up.postgres.sql.tmpl"},
			{".up.sqlite.sql", "templates/migration/create.up.sqlite.sql.tmpl"}, {".down.sql", "templates/migration/create.down.sql.tmpl"}}
	}
	for _, f := range sql {
		if err := p.create(set+"/"+full+f[0], f[1], data); err != nil {
			return nil, err
		}
	}
	if hasSet {
		return p.done()
	}
	if err := p.free(false, "migrationFiles", "migrations"); err != nil {
		return nil, err
	}
	if err := p.free(true, "TestMigrationsRollBackAndApplyAgain"); err != nil {
		return nil, err
	}
	for _, f := range [][2]string{{"migrations.go", "templates/migration/migrations.go.tmpl"}, {"migrations_test.go", "templates/migration/migrations_test.go.tmpl"}} {
		if err := p.create(module+"/"+f[0], f[1], data); err != nil {
			return nil, err
		}
	}
	if err := p.addToModule(fmt.Sprintf("db.Migrations(%q, migrations()),", module), "migration set", dbPkg); err != nil {
		return nil, err
	}
	return p.done()
}

// newAddPlan is newPlan for a command that adds to module.go after
// Module's last registration, not above a line of its own: what is the
// registration, for the error of a Module declared outside module.go.
// NAME is no Go name alone, so it may be a keyword (contacts:import).
func newAddPlan(cmd, dir, module, name string, example [2]string, what string) (*plan, error) {
	if err := checkName(cmd, "module", module, example[0]); err != nil {
		return nil, err
	}
	if !snake.MatchString(name) { // a keyword too: no Go name is NAME alone
		return nil, fmt.Errorf("%s: the name %q must be in lower snake case, such as %s", cmd, name, example[1])
	}
	if !fileExists(filepath.Join(dir, module, "module.go")) {
		if decls, _, err := declarations(dir, module); err == nil && decls["Module"] != "" {
			return nil, fmt.Errorf("%s: %s declares Module already: move it to %s/module.go, for %s to add the %s to it, then run the command again", cmd, decls["Module"], module, cmd, what)
		}
	}
	return newPlan(cmd, dir, module, "", example)
}

// addToModule adds line to the fx.Module call of module.go's Module,
// after its last argument, and the imports it needs. what names the
// registration for the error of a module.go without such a call, which
// says what to add by hand.
func (p *plan) addToModule(line, what string, importPaths ...string) error {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, p.modFile, p.modSrc, parser.SkipObjectResolution)
	if err != nil {
		return fmt.Errorf("%s: %s does not parse (%v): fix it, then run the command again", p.cmd, p.modFile, err)
	}
	call := moduleCall(f)
	if call == nil || len(call.Args) == 0 {
		hand := ""
		for _, ip := range importPaths {
			if !imports(p.modSrc, ip) {
				hand += fmt.Sprintf(", and import %q", ip)
			}
		}
		return fmt.Errorf("%s: %s declares no var Module = fx.Module(…) to add the %s to: add %s to its Module by hand%s", p.cmd, p.modFile, what, strings.TrimSuffix(line, ","), hand)
	}
	end := fset.Position(call.Args[len(call.Args)-1].End()).Offset
	rparen := fset.Position(call.Rparen).Offset
	var edited []byte
	if nl := bytes.IndexByte(p.modSrc[end:rparen], '\n'); nl >= 0 { // a line of its own, after the last argument's
		at := end + nl + 1
		edited = append(append(append(edited, p.modSrc[:at]...), "\t"+line+"\n"...), p.modSrc[at:]...)
	} else { // fx.Module("contacts")
		edited = append(append(append(edited, p.modSrc[:end]...), ", "+strings.TrimSuffix(line, ",")...), p.modSrc[end:]...)
	}
	for _, ip := range importPaths {
		if edited, err = addImport(edited, ip, p.app); err != nil {
			return fmt.Errorf("%s: %s: %w", p.cmd, p.modFile, err)
		}
	}
	p.modSrc = edited
	return nil
}

// moduleCall is the call fx.Module(…) that f's var Module is, or nil.
func moduleCall(f *ast.File) *ast.CallExpr {
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			for i, n := range v.Names {
				if n.Name != "Module" || i >= len(v.Values) {
					continue
				}
				if call, ok := v.Values[i].(*ast.CallExpr); ok {
					if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Module" {
						if x, ok := sel.X.(*ast.Ident); ok && x.Name == "fx" {
							return call
						}
					}
				}
			}
		}
	}
	return nil
}

// calls reports whether module.go (modSrc) or another Go file of the
// module in dir, tests apart, holds the call call, such as
// "db.Migrations(".
func calls(dir, module string, modSrc []byte, call string) bool {
	if bytes.Contains(modSrc, []byte(call)) {
		return true
	}
	files, _ := filepath.Glob(filepath.Join(dir, module, "*.go"))
	for _, file := range files {
		if src, err := os.ReadFile(file); err == nil && !strings.HasSuffix(file, "_test.go") && bytes.Contains(src, []byte(call)) {
			return true
		}
	}
	return false
}
