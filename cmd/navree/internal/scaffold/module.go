package scaffold

import "fmt"

// MakeModule plans the module NAME of the app at dir: NAME/module.go,
// its Module an fx.Module with a line for each make:* command to add its
// registrations above, and NAME.Module added to the app's modules in
// modules/modules.go above the line "// navree:modules" (see Hints when
// it has no such line). It writes nothing: see Write. It refuses a name that is
// not a Go identifier in snake case, is a keyword or would shadow a
// package the app imports, and a module that exists: its module.go, or
// a Module declared in another file of the package.
func MakeModule(dir, name string) ([]Change, error) {
	p, err := newPlan("make:module", dir, name, "", [2]string{"contacts", ""})
	if err != nil {
		return nil, err
	}
	if p.modExisted {
		return nil, fmt.Errorf("make:module: %s exists: choose another name, or add to that module with navree make:job, make:listener, make:notification or make:mail", p.modFile)
	}
	return p.done()
}
