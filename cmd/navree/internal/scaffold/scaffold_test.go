package scaffold_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/navree/navree/cmd/navree/internal/scaffold"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/ from what the generators write")

// newApp writes a new app, example.com/crm, into a temporary folder.
func newApp(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "crm")
	if _, err := scaffold.New(dir, scaffold.App{Module: "example.com/crm"}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestGenerators writes a new app, comparing its Go files and README
// with testdata/new/PATH.golden, then runs each generator in turn on it,
// writing what it plans, and compares its files with
// testdata/STEP/PATH.golden and the list of its changes with
// testdata/STEP/changes.golden. go test -update rewrites them.
func TestGenerators(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "crm")
	written, err := scaffold.New(dir, scaffold.App{Module: "example.com/crm"})
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range written {
		if strings.HasSuffix(file, ".go") || file == "README.md" { // config/app.toml has its own tests
			content, err := os.ReadFile(filepath.Join(dir, file))
			if err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("new", file+".golden"), content)
		}
	}
	steps := []struct {
		name string
		make func() ([]scaffold.Change, error)
	}{
		{"make_module", func() ([]scaffold.Change, error) { return scaffold.MakeModule(dir, "contacts") }},
		{"make_job", func() ([]scaffold.Change, error) { return scaffold.MakeJob(dir, "contacts", "export") }},
		{"make_listener", func() ([]scaffold.Change, error) {
			return scaffold.MakeListener(dir, "contacts", "send_welcome", "contact_created")
		}},
		{"make_listener_of_another_module", func() ([]scaffold.Change, error) {
			return scaffold.MakeListener(dir, "hello", "wave_back", "contacts.contact_created")
		}},
		{"make_notification", func() ([]scaffold.Change, error) { return scaffold.MakeNotification(dir, "contacts", "export_ready") }},
		{"make_mail", func() ([]scaffold.Change, error) { return scaffold.MakeMail(dir, "contacts", "welcome") }},
		{"make_mail_again", func() ([]scaffold.Change, error) { return scaffold.MakeMail(dir, "contacts", "goodbye") }},
		{"make_job_of_a_new_module", func() ([]scaffold.Change, error) { return scaffold.MakeJob(dir, "billing", "charge") }},
	}
	for _, step := range steps {
		changes, err := step.make()
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		var list strings.Builder
		for _, c := range changes {
			fmt.Fprintf(&list, "%s %s\n", map[bool]string{false: "created", true: "edited"}[c.Edited], c.Path)
			golden(t, filepath.Join(step.name, c.Path+".golden"), c.Content)
		}
		golden(t, filepath.Join(step.name, "changes.golden"), []byte(list.String()))
		if err := scaffold.Write(dir, changes); err != nil {
			t.Fatal(err)
		}
	}
}

// golden compares got with the file testdata/name, or with -update
// writes it.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: run go test ./cmd/navree/internal/scaffold -update", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from what the generator wrote (go test ./cmd/navree/internal/scaffold -update rewrites it); got:\n%s", path, got)
	}
}

// TestAModuleWithoutAnAnchorInModulesGo: when modules/modules.go has no
// line to add a new module above, the module is made and Hints says what
// to add.
func TestAModuleWithoutAnAnchorInModulesGo(t *testing.T) {
	dir := newApp(t)
	list := filepath.Join(dir, "modules", "modules.go")
	src, _ := os.ReadFile(list)
	if err := os.WriteFile(list, []byte(strings.Replace(string(src), "// navree:modules", "// the modules", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	changes, err := scaffold.MakeModule(dir, "contacts")
	if err != nil || len(changes) != 1 || changes[0].Path != "contacts/module.go" {
		t.Fatalf("MakeModule = %v, %v", changes, err)
	}
	hints := scaffold.Hints(dir, changes)
	want := `The module contacts is new, and modules/modules.go has no line "// navree:modules" to add the module above: add contacts.Module to the app's modules by hand, and import "example.com/crm/contacts".`
	if len(hints) != 1 || hints[0] != want {
		t.Fatalf("Hints = %q, want %q", hints, want)
	}
	changes, _ = scaffold.MakeModule(newApp(t), "contacts")
	if hints := scaffold.Hints(dir, changes); hints != nil {
		t.Fatalf("Hints of a module added to modules/modules.go = %q", hints)
	}
}

// contactsGo declares the module contacts in contacts/contacts.go, not
// in contacts/module.go.
const contactsGo = "package contacts\n\nimport \"go.uber.org/fx\"\n\nvar Module = fx.Module(\"contacts\")\n"

// TestRefusals: what each generator refuses, with its error, and that it
// plans nothing then.
func TestRefusals(t *testing.T) {
	write := func(dir string, files map[string]string) {
		for name, content := range files {
			path := filepath.Join(dir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	listener := func(module, name, event string) func(string) ([]scaffold.Change, error) {
		return func(dir string) ([]scaffold.Change, error) { return scaffold.MakeListener(dir, module, name, event) }
	}
	tests := []struct {
		name  string
		files map[string]string // written into a new app first
		make  func(dir string) ([]scaffold.Change, error)
		want  string
	}{
		{"module exists", nil, func(dir string) ([]scaffold.Change, error) { return scaffold.MakeModule(dir, "hello") },
			"make:module: hello/module.go exists: choose another name, or add to that module with navree make:job, make:listener, make:notification or make:mail"},
		{"module name not snake", nil, func(dir string) ([]scaffold.Change, error) { return scaffold.MakeModule(dir, "Contacts") },
			`make:module: the module "Contacts" must be a Go identifier in lower snake case, not a keyword, such as contacts`},
		{"module name a keyword", nil, func(dir string) ([]scaffold.Change, error) { return scaffold.MakeModule(dir, "select") },
			`make:module: the module "select" must be a Go identifier in lower snake case, not a keyword, such as contacts`},
		{"module shadows an import", nil, func(dir string) ([]scaffold.Change, error) { return scaffold.MakeModule(dir, "mail") },
			"make:module: a module named mail would shadow the package mail that the app or the generated code imports: choose another name, such as mails"},
		{"module shadows the app's modules", nil, func(dir string) ([]scaffold.Change, error) { return scaffold.MakeModule(dir, "modules") },
			"make:module: a module named modules would shadow the package modules that the app or the generated code imports: choose another name, such as app_modules"},
		{"job of a new module that shadows an import", nil, func(dir string) ([]scaffold.Change, error) { return scaffold.MakeJob(dir, "queue", "export") },
			"make:job: a module named queue would shadow the package queue that the app or the generated code imports: choose another name, such as queues"},
		{"no app", nil, func(dir string) ([]scaffold.Change, error) {
			return scaffold.MakeNotification(filepath.Join(dir, "hello"), "billing", "invoice_paid")
		}, "make:notification: this folder holds no app (no go.mod): run it in an app, or make one with navree new"},
		{"job file exists", nil, func(dir string) ([]scaffold.Change, error) { return scaffold.MakeJob(dir, "hello", "greet") },
			"make:job: hello/greet.go exists: choose another name, or remove it"},
		{"job name declared", map[string]string{"hello/waves.go": "package hello\n\ntype Wave struct{}\n"},
			func(dir string) ([]scaffold.Change, error) { return scaffold.MakeJob(dir, "hello", "wave") },
			"make:job: hello/waves.go declares Wave already: choose another name, or rename it there"},
		{"job without the anchor", map[string]string{"hello/module.go": "package hello\n\nvar Module = 1\n"},
			func(dir string) ([]scaffold.Change, error) { return scaffold.MakeJob(dir, "hello", "bye") },
			`make:job: hello/module.go has no line "// navree:jobs" to add the job above: add queue.Register[Bye](newByeHandler), to its fx.Module by hand, and import "github.com/navree/navree/queue"`},
		{"job of a module that declares Module in another file", map[string]string{"contacts/contacts.go": contactsGo},
			func(dir string) ([]scaffold.Change, error) { return scaffold.MakeJob(dir, "contacts", "sync_calendar") },
			`make:job: contacts/contacts.go declares Module already: move it to contacts/module.go, with the line "// navree:jobs" in its fx.Module to add the job above, then run the command again`},
		{"listener of a module that declares Module in another file", map[string]string{"contacts/contacts.go": contactsGo},
			listener("contacts", "send_welcome", "contact_created"),
			`make:listener: contacts/contacts.go declares Module already: move it to contacts/module.go, with the line "// navree:listeners" in its fx.Module to add the listener above, then run the command again`},
		{"notification of a module that declares Module in another file", map[string]string{"contacts/contacts.go": contactsGo},
			func(dir string) ([]scaffold.Change, error) {
				return scaffold.MakeNotification(dir, "contacts", "export_ready")
			},
			`make:notification: contacts/contacts.go declares Module already: move it to contacts/module.go, with the line "// navree:notifications" in its fx.Module to add the notification above, then run the command again`},
		{"mail of a module that declares Module in another file", map[string]string{"contacts/contacts.go": contactsGo},
			func(dir string) ([]scaffold.Change, error) { return scaffold.MakeMail(dir, "contacts", "welcome") },
			`make:mail: contacts/contacts.go declares Module already: move it to contacts/module.go, with the line "// navree:mail" in its fx.Module to add the mail templates and preview above, then run the command again`},
		{"module that declares Module in another file", map[string]string{"contacts/contacts.go": contactsGo},
			func(dir string) ([]scaffold.Change, error) { return scaffold.MakeModule(dir, "contacts") },
			"make:module: contacts/contacts.go declares Module already: the module contacts exists (for the make:* commands to add to it, move Module to contacts/module.go)"},
		{"a module.go that does not parse", map[string]string{"hello/module.go": "package hello\n\nvar Module = (\n// navree:jobs\n"},
			func(dir string) ([]scaffold.Change, error) { return scaffold.MakeJob(dir, "hello", "bye") },
			"make:job: hello/module.go does not parse (hello/module.go:4:16: expected operand, found 'EOF'): fix it, then run the command again"},
		{"listener without an event", nil, listener("contacts", "send_welcome", ""),
			"make:listener: give the event send_welcome listens to: --event EVENT for an event of contacts (its type written when contacts has none), such as --event contact_created, or --event OTHER.EVENT for one of the module OTHER, such as --event billing.invoice_paid"},
		{"listener of a bad event", nil, listener("contacts", "send_welcome", "ContactCreated"),
			`make:listener: the event "ContactCreated" must be a name in lower snake case, such as contact_created, or a module's and a name, such as billing.invoice_paid`},
		{"listener named as its new event", nil, listener("contacts", "contact_created", "contact_created"),
			"make:listener: the listener and its event would both be contacts/contact_created.go: give them different names, such as contact_created and --event contact_created_created"},
		{"listener of a type that is no event", map[string]string{"contacts/contact.go": "package contacts\n\ntype ContactCreated struct{}\n"},
			listener("contacts", "send_welcome", "contact_created"),
			`make:listener: contacts/contact.go declares ContactCreated without an EventName method, so it is no event: add func (ContactCreated) EventName() string { return "contacts.contact_created" } there, or choose another event`},
		{"listener of an event whose name is not a type", map[string]string{"contacts/contact.go": "package contacts\n\nfunc ContactCreated() {}\n"},
			listener("contacts", "send_welcome", "contact_created"),
			"make:listener: contacts/contact.go declares ContactCreated already, not as a type: choose another event name, or rename it there"},
		{"listener of a module that does not exist", nil, listener("contacts", "send_welcome", "billing.invoice_paid"),
			"make:listener: the app has no module billing (no folder billing/) to hold the event billing.invoice_paid: make it with navree make:module billing, or listen to an event of contacts, such as --event invoice_paid"},
		{"listener in an import cycle", map[string]string{"billing/invoice.go": "package billing\n\nimport _ \"example.com/crm/hello\"\n"},
			listener("hello", "thank", "billing.invoice_paid"),
			"make:listener: billing imports hello, so hello cannot import billing to listen to billing.invoice_paid (an import cycle): put the listener in billing (navree make:listener billing thank --event invoice_paid)"},
		{"listener without the anchor", map[string]string{"contacts/module.go": "package contacts\n\nimport \"go.uber.org/fx\"\n\nvar Module = fx.Module(\"contacts\")\n"},
			listener("contacts", "send_welcome", "contact_created"),
			`make:listener: contacts/module.go has no line "// navree:listeners" to add the listener above: add events.Listen[ContactCreated]("contacts.send_welcome", newSendWelcomeListener), to its fx.Module by hand, and import "github.com/navree/navree/events"`},
		{"notification file exists", map[string]string{"hello/invoice_paid.go": "package hello\n"},
			func(dir string) ([]scaffold.Change, error) {
				return scaffold.MakeNotification(dir, "hello", "invoice_paid")
			},
			"make:notification: hello/invoice_paid.go exists: choose another name, or remove it"},
		{"notification name a keyword", nil, func(dir string) ([]scaffold.Change, error) { return scaffold.MakeNotification(dir, "hello", "type") },
			`make:notification: the name "type" must be a Go identifier in lower snake case, not a keyword, such as invoice_paid`},
		{"notification without the anchor", map[string]string{"hello/module.go": "package hello\n\n// navree:jobs\n"},
			func(dir string) ([]scaffold.Change, error) {
				return scaffold.MakeNotification(dir, "hello", "invoice_paid")
			},
			`make:notification: hello/module.go has no line "// navree:notifications" to add the notification above: add notify.Register[InvoicePaid](), to its fx.Module by hand, and import "github.com/navree/navree/notify"`},
		{"mail template exists", map[string]string{"hello/mail/welcome.txt.tmpl": "Hi"},
			func(dir string) ([]scaffold.Change, error) { return scaffold.MakeMail(dir, "hello", "welcome") },
			"make:mail: hello/mail/welcome.txt.tmpl exists: choose another name, or remove it"},
		{"mail template of another module", map[string]string{"billing/mail/welcome.html.tmpl": "Hi"},
			func(dir string) ([]scaffold.Change, error) { return scaffold.MakeMail(dir, "hello", "welcome") },
			"make:mail: billing/mail/welcome.html.tmpl is a template mail/welcome too, and the app's modules share one set of template names (two of one name fail the boot): choose another name"},
		{"mail name declared", map[string]string{"hello/data.go": "package hello\n\nvar WelcomeData = 1\n"},
			func(dir string) ([]scaffold.Change, error) { return scaffold.MakeMail(dir, "hello", "welcome") },
			"make:mail: hello/data.go declares WelcomeData already: choose another name, or rename it there"},
		{"mail preview name declared", map[string]string{"hello/data.go": "package hello\n\nvar welcomePreview = 1\n"},
			func(dir string) ([]scaffold.Change, error) { return scaffold.MakeMail(dir, "hello", "welcome") },
			"make:mail: hello/data.go declares welcomePreview already: choose another name, or rename it there"},
		{"mail preview without the anchor", map[string]string{"hello/module.go": "package hello\n\nimport (\n\t\"github.com/navree/navree/mail\"\n\t\"go.uber.org/fx\"\n)\n\nvar Module = fx.Module(\"hello\", mail.Templates(nil))\n"},
			func(dir string) ([]scaffold.Change, error) { return scaffold.MakeMail(dir, "hello", "welcome") },
			`make:mail: hello/module.go has no line "// navree:mail" to add the mail preview above: add mail.Previews(welcomePreview), to its fx.Module by hand`},
		{"mail without the anchor", map[string]string{"hello/module.go": "package hello\n\nimport \"go.uber.org/fx\"\n\nvar Module = fx.Module(\"hello\")\n"},
			func(dir string) ([]scaffold.Change, error) { return scaffold.MakeMail(dir, "hello", "welcome") },
			`make:mail: hello/module.go has no line "// navree:mail" to add the mail templates above: add mail.Templates(mailTemplates), to its fx.Module by hand, and import "github.com/navree/navree/mail"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := newApp(t)
			write(dir, tt.files)
			changes, err := tt.make(dir)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("got %v\nwant %s", err, tt.want)
			}
			if changes != nil {
				t.Fatalf("a refusal planned %v", changes)
			}
		})
	}
}
