package scaffold

import (
	"fmt"
	"go/ast"
	"os"
	"path/filepath"
	"strings"
)

// listenersAnchor is the line of a module.go above which make:listener
// adds its registrations.
const listenersAnchor = "// navree:listeners"

const eventsPkg = framework + "/events"

// MakeListener plans the queued listener NAME of the module MODULE in the
// app at dir, of the event event: EVENT, an event of MODULE, or
// OTHER.EVENT, one of the module OTHER. The event's type is camel(EVENT)
// in its module, with EventName "MODULE.EVENT"; when the module does not
// declare it, MakeListener writes it too, as MODULE/EVENT.go. It plans
// MODULE/NAME.go (the listener, named "MODULE.NAME", whose job is
// events.MODULE.NAME) and MODULE/NAME_test.go (it dispatches the event on
// the real bus and runs the listener on the real queue), and the
// registration in MODULE/module.go above the line "// navree:listeners"
// (module.go made when missing, and then added to modules/modules.go). It writes
// nothing: see Write. Besides make:job's refusals, it refuses a type of
// the event's name that has no EventName method, a module OTHER that
// does not exist, and one that imports MODULE (an import cycle).
func MakeListener(dir, module, name, event string) ([]Change, error) {
	const cmd = "make:listener"
	p, err := newPlan(cmd, dir, module, name, [2]string{"contacts", "send_welcome"})
	if err != nil {
		return nil, err
	}
	if event == "" {
		return nil, fmt.Errorf("%s: give the event %s listens to: --event EVENT for an event of %s (its type written when %s has none), such as --event contact_created, or --event OTHER.EVENT for one of the module OTHER, such as --event billing.invoice_paid", cmd, name, module, module)
	}
	evModule, evName, other := strings.Cut(event, ".")
	if !other {
		evModule, evName = module, event
	}
	if checkName(cmd, "module", evModule, "") != nil || checkName(cmd, "event", evName, "") != nil {
		return nil, fmt.Errorf("%s: the event %q must be a name in lower snake case, such as contact_created, or a module's and a name, such as billing.invoice_paid", cmd, event)
	}
	typ, evType := camel(name), camel(evName)
	data := map[string]string{"Package": module, "Type": typ, "Listener": lowerCamel(name) + "Listener",
		"Name": module + "." + name, "JobName": "events." + module + "." + name, "Import": p.app + "/" + module,
		"Event": evType, "EventType": module + "." + evType, "EventName": evModule + "." + evName, "EventImport": "",
		"Test": "Test" + typ + "ListensTo" + evType, "Modules": p.modulesImport()}
	if evModule != module {
		data["Event"], data["EventType"], data["EventImport"] = evModule+"."+evType, evModule+"."+evType, p.app+"/"+evModule
		if st, err := os.Stat(filepath.Join(dir, evModule)); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("%s: the app has no module %s (no folder %s/) to hold the event %s: make it with navree make:module %s, or listen to an event of %s, such as --event %s", cmd, evModule, evModule, event, evModule, module, evName)
		}
		if importsPackage(dir, evModule, data["Import"]) {
			return nil, fmt.Errorf("%s: %s imports %s, so %s cannot import %s to listen to %s (an import cycle): put the listener in %s (navree make:listener %s %s --event %s)", cmd, evModule, module, module, evModule, event, evModule, evModule, name, evName)
		}
	}
	found, err := lookupType(dir, evModule, evType)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	data["EventValue"] = data["EventType"] + "{}"
	switch {
	case found == nil:
		if evModule == module && evName == name {
			return nil, fmt.Errorf("%s: the listener and its event would both be %s/%s.go: give them different names, such as %s and --event %s_created", cmd, module, name, name, name)
		}
		evFile := evModule + "/" + evName + ".go"
		if decls, _, err := declarations(dir, evModule); err != nil {
			return nil, fmt.Errorf("%s: %w", cmd, err)
		} else if file, ok := decls[evType]; ok {
			return nil, fmt.Errorf("%s: %s declares %s already, not as a type: choose another event name, or rename it there", cmd, file, evType)
		}
		if err := p.create(evFile, "templates/listener/event.go.tmpl", map[string]string{"Package": evModule, "Type": evType, "EventName": data["EventName"]}); err != nil {
			return nil, err
		}
	case !found.methods["EventName"]:
		return nil, fmt.Errorf("%s: %s declares %s without an EventName method, so it is no event: add func (%s) EventName() string { return %q } there, or choose another event", cmd, found.file, evType, evType, data["EventName"])
	case !found.isStruct:
		data["EventValue"] = "*new(" + data["EventType"] + ")"
	}
	for _, f := range [][2]string{{name + ".go", "templates/listener/listener.go.tmpl"}, {name + "_test.go", "templates/listener/listener_test.go.tmpl"}} {
		if err := p.create(module+"/"+f[0], f[1], data); err != nil {
			return nil, err
		}
	}
	if err := p.free(false, data["Listener"], "new"+typ+"Listener"); err != nil {
		return nil, err
	}
	if err := p.free(true, data["Test"]); err != nil {
		return nil, err
	}
	registration := fmt.Sprintf("events.Listen[%s](%q, new%sListener),", data["Event"], data["Name"], typ)
	if err := p.register(listenersAnchor, registration, "listener", eventsPkg, data["EventImport"]); err != nil {
		return nil, err
	}
	return p.done()
}

// goType is what a package declares of a type.
type goType struct {
	file     string          // where it is declared, relative to the app
	isStruct bool            // a struct type
	methods  map[string]bool // its methods of a value receiver
}

// lookupType finds the type name among the Go files (tests apart) of the
// package in dir/module; nil when none declares it.
func lookupType(dir, module, name string) (*goType, error) {
	var t *goType
	methods := map[string]bool{}
	files, _ := filepath.Glob(filepath.Join(dir, module, "*.go"))
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, _, err := parseGo(module, file)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv != nil && len(d.Recv.List) == 1 {
					if id, ok := d.Recv.List[0].Type.(*ast.Ident); ok && id.Name == name {
						methods[d.Name.Name] = true
					}
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if s, ok := s.(*ast.TypeSpec); ok && s.Name.Name == name {
						_, isStruct := s.Type.(*ast.StructType)
						t = &goType{file: module + "/" + filepath.Base(file), isStruct: isStruct}
					}
				}
			}
		}
	}
	if t != nil {
		t.methods = methods
	}
	return t, nil
}

// importsPackage reports whether a Go file (tests apart) of the package
// in dir/module imports importPath.
func importsPackage(dir, module, importPath string) bool {
	files, _ := filepath.Glob(filepath.Join(dir, module, "*.go"))
	for _, file := range files {
		if src, err := os.ReadFile(file); err == nil && !strings.HasSuffix(file, "_test.go") && imports(src, importPath) {
			return true
		}
	}
	return false
}
