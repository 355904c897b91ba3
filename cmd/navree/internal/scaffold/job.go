package scaffold

import "fmt"

// MakeJob plans the job NAME of the module MODULE in the app at dir: the
// files MODULE/NAME.go and MODULE/NAME_test.go (it runs the job in the
// app of modules/modules.go, and checks the job's own outcome), and the
// registration in MODULE/module.go (made when missing, and then added to
// modules/modules.go). It writes nothing: see Write. It refuses a name
// that is not a Go identifier in snake case or is a keyword, a file or a
// Go name that exists, and a module.go without the line "// navree:jobs".
func MakeJob(dir, module, name string) ([]Change, error) {
	p, err := newPlan("make:job", dir, module, name, [2]string{"contacts", "export"})
	if err != nil {
		return nil, err
	}
	typ := camel(name)
	data := map[string]string{"Package": module, "Type": typ, "Handler": lowerCamel(name) + "Handler",
		"JobName": module + "." + name, "Import": p.app + "/" + module, "Modules": p.modulesImport()}
	for _, f := range [][2]string{{name + ".go", "templates/job/job.go.tmpl"}, {name + "_test.go", "templates/job/job_test.go.tmpl"}} {
		if err := p.create(module+"/"+f[0], f[1], data); err != nil {
			return nil, err
		}
	}
	if err := p.free(false, typ, data["Handler"], "new"+typ+"Handler"); err != nil {
		return nil, err
	}
	if err := p.free(true, "Test"+typ+"Runs"); err != nil {
		return nil, err
	}
	if err := p.register(jobsAnchor, fmt.Sprintf("queue.Register[%s](new%sHandler),", typ, typ), "job", queuePkg); err != nil {
		return nil, err
	}
	return p.done()
}
