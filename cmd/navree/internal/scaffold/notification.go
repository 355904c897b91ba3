package scaffold

import (
	"fmt"
	"strings"
)

// notificationsAnchor is the line of a module.go above which
// make:notification adds its registrations.
const notificationsAnchor = "// navree:notifications"

const notifyPkg = framework + "/notify"

// MakeNotification plans the notification NAME of the module MODULE in
// the app at dir: MODULE/NAME.go (its type, camel(NAME), of
// NotificationType "MODULE.NAME", sent via the mail and database
// channels with a ToMail and a ToDatabase), MODULE/NAME_test.go (one test
// with notifytest's fake, one through the real notifier and queue) and
// notify.Register in MODULE/module.go above the line
// "// navree:notifications" (module.go made when missing, and then added
// to modules/modules.go). It writes nothing: see Write. It refuses what MakeJob
// refuses.
func MakeNotification(dir, module, name string) ([]Change, error) {
	const cmd = "make:notification"
	p, err := newPlan(cmd, dir, module, name, [2]string{"billing", "invoice_paid"})
	if err != nil {
		return nil, err
	}
	typ := camel(name)
	data := map[string]string{"Package": module, "Type": typ, "NotificationType": module + "." + name,
		"Subject": human(name), "Recipient": lowerCamel(name) + "Recipient", "Import": p.app + "/" + module, "Modules": p.modulesImport()}
	for _, f := range [][2]string{{name + ".go", "templates/notification/notification.go.tmpl"}, {name + "_test.go", "templates/notification/notification_test.go.tmpl"}} {
		if err := p.create(module+"/"+f[0], f[1], data); err != nil {
			return nil, err
		}
	}
	if err := p.free(false, typ); err != nil {
		return nil, err
	}
	if err := p.free(true, data["Recipient"], "Test"+typ+"IsSent", "Test"+typ+"ReachesTheMailAndTheInbox"); err != nil {
		return nil, err
	}
	if err := p.register(notificationsAnchor, fmt.Sprintf("notify.Register[%s](),", typ), "notification", notifyPkg); err != nil {
		return nil, err
	}
	return p.done()
}

// human is a snake-case name as a sentence's words, an initialism in
// capitals: invoice_paid is "Invoice paid", crm_synced "CRM synced".
func human(s string) string {
	words := strings.FieldsFunc(s, func(r rune) bool { return r == '_' })
	for i, w := range words {
		if c, ok := initialism(w); ok || i == 0 {
			words[i] = c
		}
	}
	return strings.Join(words, " ")
}
