package scaffold

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// mailAnchor is the line of a module.go above which make:mail adds the
// module's templates.
const mailAnchor = "// navree:mail"

const mailPkg = framework + "/mail"

// MakeMail plans the template mail NAME of the module MODULE in the app
// at dir, named "mail/NAME" as mail.Template takes it: its bodies
// MODULE/mail/NAME.html.tmpl and MODULE/mail/NAME.txt.tmpl,
// MODULE/NAME_mail.go (the data the templates render, camel(NAME)+"Data",
// camel(NAME)+"Mail", which builds the message, and its preview NAME,
// lowerCamel(NAME)+"Preview") and MODULE/NAME_mail_test.go (it sends the
// mail through the memory transport, and renders the preview), and
// mail.Previews of the preview in MODULE/module.go above the line
// "// navree:mail", so that mail:preview NAME shows it. When no Go file
// of the module calls mail.Templates, it also plans
// MODULE/mail_templates.go, an embed.FS of MODULE/mail, and
// mail.Templates of it above the same line (module.go made when missing,
// and then added to modules/modules.go). It writes nothing: see Write. Besides MakeJob's refusals, it refuses a name whose
// templates another module has: the app's template names are one set.
func MakeMail(dir, module, name string) ([]Change, error) {
	const cmd = "make:mail"
	p, err := newPlan(cmd, dir, module, name, [2]string{"contacts", "welcome"})
	if err != nil {
		return nil, err
	}
	typ := camel(name)
	data := map[string]string{"Package": module, "Name": name, "Func": typ + "Mail", "Data": typ + "Data", "Preview": lowerCamel(name) + "Preview",
		"Test": "Test" + typ + "MailRenders", "Template": "mail/" + name, "Files": "mail/" + name + ".html.tmpl and .txt.tmpl",
		"Subject": human(name), "Import": p.app + "/" + module, "Modules": p.modulesImport()}
	others, _ := filepath.Glob(filepath.Join(dir, "*", "mail", name+".*.tmpl"))
	for _, other := range others {
		if r, _ := filepath.Rel(dir, other); !strings.HasPrefix(filepath.ToSlash(r), module+"/") {
			return nil, fmt.Errorf("%s: %s is a template mail/%s too, and the app's modules share one set of template names (two of one name fail the boot): choose another name", cmd, filepath.ToSlash(r), name)
		}
	}
	for _, f := range [][2]string{{"mail/" + name + ".html.tmpl", "templates/mail/mail.html.tmpl.tmpl"}, {"mail/" + name + ".txt.tmpl", "templates/mail/mail.txt.tmpl.tmpl"},
		{name + "_mail.go", "templates/mail/mail.go.tmpl"}, {name + "_mail_test.go", "templates/mail/mail_test.go.tmpl"}} {
		if err := p.create(module+"/"+f[0], f[1], data); err != nil {
			return nil, err
		}
	}
	if err := p.free(false, data["Func"], data["Data"], data["Preview"]); err != nil {
		return nil, err
	}
	if err := p.free(true, data["Test"]); err != nil {
		return nil, err
	}
	if !callsMailTemplates(dir, module, p.modSrc) {
		if err := p.free(false, "mailTemplates"); err != nil {
			return nil, err
		}
		if err := p.create(module+"/mail_templates.go", "templates/mail/mail_templates.go.tmpl", data); err != nil {
			return nil, err
		}
		if err := p.register(mailAnchor, "mail.Templates(mailTemplates),", "mail templates", mailPkg); err != nil {
			return nil, err
		}
	}
	if err := p.register(mailAnchor, "mail.Previews("+data["Preview"]+"),", "mail preview", mailPkg); err != nil {
		return nil, err
	}
	return p.done()
}

// callsMailTemplates reports whether module.go (modSrc) or another Go
// file of the module in dir, tests apart, calls mail.Templates.
func callsMailTemplates(dir, module string, modSrc []byte) bool {
	if strings.Contains(string(modSrc), "mail.Templates(") {
		return true
	}
	files, _ := filepath.Glob(filepath.Join(dir, module, "*.go"))
	for _, file := range files {
		if src, err := os.ReadFile(file); err == nil && !strings.HasSuffix(file, "_test.go") && strings.Contains(string(src), "mail.Templates(") {
			return true
		}
	}
	return false
}
