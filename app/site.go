package app

import (
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// Site is a place in an app's code where something was registered: a
// job type, a listener, a schedule entry, a channel. Modules keep it so
// that an error (two registrations of one name, a constructor of the
// wrong shape) points at the user's line, not at the module's own code.
type Site struct {
	File    string // as the compiler saw it: absolute, or module-relative with -trimpath
	Line    int
	Package string // the import path of the registering function's package
}

// Caller returns the Site skip frames above the function that calls it:
// in a registration function such as queue.Register, Caller(1) is the
// line of the app that called it. A frame that cannot be found is the
// Site "unknown place".
func Caller(skip int) Site {
	pc, file, line, ok := runtime.Caller(skip + 1)
	if !ok {
		return Site{File: "unknown place"}
	}
	s := Site{File: file, Line: line}
	if fn := runtime.FuncForPC(pc); fn != nil {
		s.Package = packageOf(fn.Name())
	}
	return s
}

// packageOf is the import path of the package of the function named
// name, as runtime.Func names it: github.com/acme/crm/billing of
// github.com/acme/crm/billing.init.func1.
func packageOf(name string) string {
	slash := strings.LastIndexByte(name, '/')
	if dot := strings.IndexByte(name[slash+1:], '.'); dot >= 0 {
		return name[:slash+1+dot]
	}
	return name
}

// String is the site as errors and listings show it: relative to the
// working directory when it is inside it ("contacts/module.go:14"), else
// its folder and file ("…/contacts/module.go:14"), so that no machine's
// paths are shown.
func (s Site) String() string {
	if s.Line == 0 {
		return s.File
	}
	file := filepath.ToSlash(s.File)
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, s.File); err == nil && filepath.IsLocal(rel) {
			return filepath.ToSlash(rel) + ":" + strconv.Itoa(s.Line)
		}
	}
	return "…/" + path.Base(path.Dir(file)) + "/" + path.Base(file) + ":" + strconv.Itoa(s.Line)
}
