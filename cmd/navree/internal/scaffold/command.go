package scaffold

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

const appPkg = framework + "/app"

// MakeCommand plans the command MODULE:NAME of the app at dir (NAME's
// underscores hyphens, as in queue:prune-failed): MODULE/NAME_command.go,
// the app.Command, whose Action takes the app's *db.DB and prints what it
// did, MODULE/NAME_command_test.go (it runs the command in the app of
// modules/modules.go, on a migrated temporary database, and checks that
// it succeeds, which stays true as its work is filled in), and app.Commands of it
// in MODULE/module.go, after Module's last registration (module.go made
// when missing, and then added to modules/modules.go). It writes
// nothing: see Write. Besides make:job's refusals, it refuses a command
// name that a Go file of the module has already.
func MakeCommand(dir, module, name string) ([]Change, error) {
	const cmd = "make:command"
	p, err := newAddPlan(cmd, dir, module, name, [2]string{"contacts", "import"}, "command")
	if err != nil {
		return nil, err
	}
	command := module + ":" + strings.ReplaceAll(name, "_", "-")
	files, _ := filepath.Glob(filepath.Join(dir, module, "*.go"))
	for _, file := range files {
		if src, err := os.ReadFile(file); err == nil && !strings.HasSuffix(file, "_test.go") && strings.Contains(string(src), fmt.Sprintf("%q", command)) {
			return nil, fmt.Errorf("%s: %s/%s has a command %s already: choose another name", cmd, module, filepath.Base(file), command)
		}
	}
	typ := camel(name)
	data := map[string]string{"Package": module, "Command": command, "Var": lowerCamel(name) + "Command",
		"Test": "Test" + typ + "Command", "Modules": p.modulesImport()}
	if err := p.free(false, data["Var"]); err != nil {
		return nil, err
	}
	if err := p.free(true, data["Test"]); err != nil {
		return nil, err
	}
	for _, f := range [][2]string{{name + "_command.go", "templates/command/command.go.tmpl"}, {name + "_command_test.go", "templates/command/command_test.go.tmpl"}} {
		if err := p.create(module+"/"+f[0], f[1], data); err != nil {
			return nil, err
		}
	}
	if err := p.addToModule(fmt.Sprintf("app.Commands(%s),", data["Var"]), "command", appPkg); err != nil {
		return nil, err
	}
	return p.done()
}
