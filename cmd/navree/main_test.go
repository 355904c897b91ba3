package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runNavreeEnv makes the test binary navree: started with it set, the
// binary runs main on its arguments (see TestMain).
const runNavreeEnv = "NAVREE_RUN_NAVREE"

// pkgTmp is a folder of the package run's, removed when it ends: the
// binaries the tests build or install once.
var pkgTmp string

// TestMain lets the tests run navree as a real process: the test binary,
// started with runNavreeEnv set, is navree.
func TestMain(m *testing.M) {
	if os.Getenv(runNavreeEnv) != "" {
		main()
		os.Exit(0)
	}
	repoRoot() // before any test changes folder
	var err error
	if pkgTmp, err = os.MkdirTemp("", "navree-test-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(pkgTmp)
	os.Exit(code)
}

// TestAMakeCommandRefusesAModuleDeclaredElsewhere: in a package that
// declares Module in contacts.go, not in module.go, make:job writes no
// second Module (the app would no longer build): it exits with status 1,
// naming the file and what to do, and writes nothing.
func TestAMakeCommandRefusesAModuleDeclaredElsewhere(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":               "module example.com/crm\n\ngo 1.24\n",
		"main.go":              "package main\n\nimport (\n\t\"example.com/crm/contacts\"\n\t\"go.uber.org/fx\"\n)\n\nfunc main() {\n\tfx.New(\n\t\tcontacts.Module,\n\t\t// navree:modules\n\t)\n}\n",
		"contacts/contacts.go": "package contacts\n\nimport \"go.uber.org/fx\"\n\nvar Module = fx.Module(\"contacts\")\n",
	}
	for name, content := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(os.Args[0], "make:job", "contacts", "sync_calendar")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), runNavreeEnv+"=1", "GOPROXY=off", "GOSUMDB=off") // a regression tidies offline
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	want := `navree: make:job: contacts/contacts.go declares Module already: move it to contacts/module.go, with the line "// navree:jobs" in its fx.Module to add the job above, then run the command again` + "\n"
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 || stdout.String() != "" || stderr.String() != want {
		t.Fatalf("navree make:job contacts sync_calendar: %v, printed %q and %q; want status 1 and\n%s", err, stdout.String(), stderr.String(), want)
	}
	var found []string
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, path)
			found = append(found, filepath.ToSlash(rel))
			if b, _ := os.ReadFile(path); string(b) != files[filepath.ToSlash(rel)] {
				t.Errorf("a refused make:job changed %s:\n%s", rel, b)
			}
		}
		return nil
	})
	if len(found) != len(files) {
		t.Errorf("after a refused make:job the app holds %v, want only %d files", found, len(files))
	}
}

// newApp runs navree new into a temporary folder, in this process,
// offline after the README's install command (so it builds against this
// checkout, the clone the test binary was built from), and returns the
// app's folder and what navree printed.
func newApp(t *testing.T) (dir, printed string) {
	t.Helper()
	installed(t).setenv(t)
	dir = filepath.Join(t.TempDir(), "crm")
	var out, errs bytes.Buffer
	if err := run(context.Background(), []string{"new", dir, "--module", "example.com/crm"}, &out, &errs); err != nil {
		t.Fatalf("navree new: %v\n%s%s", err, out.String(), errs.String())
	}
	return dir, out.String()
}

// goChecks runs go build, vet and test in the app at dir.
func goChecks(t *testing.T, dir, after string) {
	t.Helper()
	for _, args := range [][]string{{"build", "./..."}, {"vet", "./..."}, {"test", "./..."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s %s: %v\n%s", strings.Join(args, " "), after, err, b)
		}
	}
}

func TestNewRefusesWhatItCannotWrite(t *testing.T) {
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "main.go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"new", full}, "new: " + full + " is not empty: choose a new folder"},
		{[]string{"new", filepath.Join(t.TempDir(), "x"), "--module", "Acme CRM"}, `new: "Acme CRM" is not a module path: use lower-case letters, digits and / . _ ~ -, such as github.com/acme/crm`},
		{[]string{"new", filepath.Join(t.TempDir(), "x"), "--framework-path", t.TempDir()}, "holds no go.mod: give a checkout of github.com/navree/navree"},
		{[]string{"new"}, "new takes one argument, the folder to write the app into: navree new crm"},
	}
	for _, tt := range tests {
		var out, errs bytes.Buffer
		err := run(context.Background(), tt.args, &out, &errs)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("navree %v: %v, want %q", tt.args, err, tt.want)
		}
	}
	if entries, _ := os.ReadDir(full); len(entries) != 1 {
		t.Fatalf("a refused new wrote into %s: %v", full, entries)
	}
}

// TestAnUnknownMakeCommandGetsASuggestion: a make: command navree does
// not have is not handed to the app, whose answer would be another
// unknown command: navree suggests the nearest, or lists them.
func TestAnUnknownMakeCommandGetsASuggestion(t *testing.T) {
	tests := []struct{ give, want string }{
		{"make:jbo", `"make:jbo" is not a navree command: did you mean make:job? (navree --help lists them)`},
		{"make:migrate", `"make:migrate" is not a navree command: did you mean make:migration? (navree --help lists them)`},
		{"make:controller", `"make:controller" is not a navree command: the make: commands are make:module, make:job, make:listener, make:notification, make:mail, make:migration, make:command`},
	}
	for _, tt := range tests {
		var out, errs bytes.Buffer
		if err := run(context.Background(), []string{tt.give, "contacts", "x"}, &out, &errs); err == nil || err.Error() != tt.want {
			t.Errorf("navree %s: %v\nwant %s", tt.give, err, tt.want)
		}
	}
}

// TestVersion: navree --version prints the version alone.
func TestVersion(t *testing.T) {
	var out, errs bytes.Buffer
	if err := run(context.Background(), []string{"--version"}, &out, &errs); err != nil || out.String() != version()+"\n" || errs.Len() > 0 {
		t.Fatalf("navree --version: %v, printed %q and %q, want %q", err, out.String(), errs.String(), version()+"\n")
	}
	if v := version(); v != "dev" && !strings.HasPrefix(v, "v") {
		t.Fatalf("version() = %q, want dev or a module version", v)
	}
}

func TestAnotherCommandNeedsAnApp(t *testing.T) {
	t.Chdir(t.TempDir())
	var out, errs bytes.Buffer
	err := run(context.Background(), []string{"queue:work"}, &out, &errs)
	if err == nil || err.Error() != `"queue:work" is not a navree command, and this folder holds no app (no go.mod) to run it: cd into an app, or make one with navree new` {
		t.Fatalf("navree queue:work outside an app: %v", err)
	}
}

// TestMakeCommands: each make:* command writes into a new app, which
// then still builds, vets and passes its tests, the generated ones too,
// offline: make:* runs no go mod tidy while go.mod has what the new
// imports need, and the README's go mod download fetched every module
// the grown app needs. One app for every command: each build of one
// takes a while.
func TestMakeCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and tests a generated app")
	}
	dir, out := newApp(t)
	for _, want := range []string{"  wrote .gitignore\n", "  wrote README.md\n", "  wrote config/app.toml\n", "  wrote go.mod\n", "  wrote hello/greet.go\n",
		"  wrote hello/greet_test.go\n", "  wrote hello/module.go\n", "  wrote main.go\n", "  wrote main_test.go\n", "  wrote modules/modules.go\n", "  wrote go.sum\n",
		"  ran git init\n", "Wrote the app example.com/crm in " + dir + ", built against the framework's clone " + repoRoot() + ". Next:\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("navree new did not print %q:\n%s", want, out)
		}
	}
	t.Chdir(dir)
	navree := func(args ...string) (string, error) {
		var out, errs bytes.Buffer
		err := run(context.Background(), args, &out, &errs)
		return out.String(), err
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"make:job", "hello", "wave", "--dry-run"}, "  would create hello/wave.go\n  would create hello/wave_test.go\n  would edit hello/module.go\n"},
		{[]string{"make:job", "hello", "wave"}, "  created hello/wave.go\n  created hello/wave_test.go\n  edited hello/module.go\n"},
		{[]string{"make:job", "contacts", "sync_calendar"}, "  created contacts/sync_calendar.go\n  created contacts/sync_calendar_test.go\n  created contacts/module.go\n  edited modules/modules.go\n"},
		{[]string{"make:module", "billing", "--dry-run"}, "  would create billing/module.go\n  would edit modules/modules.go\n"},
		{[]string{"make:module", "billing"}, "  created billing/module.go\n  edited modules/modules.go\n"},
		{[]string{"make:listener", "contacts", "send_welcome", "--event", "contact_created", "--dry-run"},
			"  would create contacts/contact_created.go\n  would create contacts/send_welcome.go\n  would create contacts/send_welcome_test.go\n  would edit contacts/module.go\n"},
		{[]string{"make:listener", "contacts", "send_welcome", "--event", "contact_created"},
			"  created contacts/contact_created.go\n  created contacts/send_welcome.go\n  created contacts/send_welcome_test.go\n  edited contacts/module.go\n"},
		{[]string{"make:listener", "--event=contacts.contact_created", "billing", "open_account"},
			"  created billing/open_account.go\n  created billing/open_account_test.go\n  edited billing/module.go\n"},
		{[]string{"make:listener", "contacts", "log_creation", "--event", "contact_created"},
			"  created contacts/log_creation.go\n  created contacts/log_creation_test.go\n  edited contacts/module.go\n"},
		{[]string{"make:notification", "billing", "invoice_paid", "--dry-run"}, "  would create billing/invoice_paid.go\n  would create billing/invoice_paid_test.go\n  would edit billing/module.go\n"},
		{[]string{"make:notification", "billing", "invoice_paid"}, "  created billing/invoice_paid.go\n  created billing/invoice_paid_test.go\n  edited billing/module.go\n"},
		{[]string{"make:mail", "contacts", "welcome", "--dry-run"},
			"  would create contacts/mail/welcome.html.tmpl\n  would create contacts/mail/welcome.txt.tmpl\n  would create contacts/welcome_mail.go\n  would create contacts/welcome_mail_test.go\n  would create contacts/mail_templates.go\n  would edit contacts/module.go\n"},
		{[]string{"make:mail", "contacts", "welcome"},
			"  created contacts/mail/welcome.html.tmpl\n  created contacts/mail/welcome.txt.tmpl\n  created contacts/welcome_mail.go\n  created contacts/welcome_mail_test.go\n  created contacts/mail_templates.go\n  edited contacts/module.go\n"},
		{[]string{"make:mail", "contacts", "password_reset"},
			"  created contacts/mail/password_reset.html.tmpl\n  created contacts/mail/password_reset.txt.tmpl\n  created contacts/password_reset_mail.go\n  created contacts/password_reset_mail_test.go\n  edited contacts/module.go\n"},
		{[]string{"make:notification", "reports", "export_ready"}, "  created reports/export_ready.go\n  created reports/export_ready_test.go\n  created reports/module.go\n  edited modules/modules.go\n"},
		{[]string{"make:migration", "contacts", "create_contacts", "--dry-run"},
			"  would create contacts/migrations/0001_create_contacts.up.postgres.sql\n  would create contacts/migrations/0001_create_contacts.up.sqlite.sql\n  would create contacts/migrations/0001_create_contacts.down.sql\n  would create contacts/migrations.go\n  would create contacts/migrations_test.go\n  would edit contacts/module.go\n"},
		{[]string{"make:migration", "contacts", "create_contacts"},
			"  created contacts/migrations/0001_create_contacts.up.postgres.sql\n  created contacts/migrations/0001_create_contacts.up.sqlite.sql\n  created contacts/migrations/0001_create_contacts.down.sql\n  created contacts/migrations.go\n  created contacts/migrations_test.go\n  edited contacts/module.go\n"},
		{[]string{"make:migration", "contacts", "add_phone"}, "  created contacts/migrations/0002_add_phone.up.sql\n  created contacts/migrations/0002_add_phone.down.sql\n"},
		{[]string{"make:migration", "ledger", "create_entries"},
			"  created ledger/migrations/0001_create_entries.up.postgres.sql\n  created ledger/migrations/0001_create_entries.up.sqlite.sql\n  created ledger/migrations/0001_create_entries.down.sql\n  created ledger/migrations.go\n  created ledger/migrations_test.go\n  created ledger/module.go\n  edited modules/modules.go\n"},
		{[]string{"make:command", "contacts", "import", "--dry-run"}, "  would create contacts/import_command.go\n  would create contacts/import_command_test.go\n  would edit contacts/module.go\n"},
		{[]string{"make:command", "contacts", "import"}, "  created contacts/import_command.go\n  created contacts/import_command_test.go\n  edited contacts/module.go\n"},
		{[]string{"make:command", "ledger", "close_month"}, "  created ledger/close_month_command.go\n  created ledger/close_month_command_test.go\n  edited ledger/module.go\n"},
	} {
		if got, err := navree(tt.args...); err != nil || got != tt.want {
			t.Fatalf("navree %s:\n%s%v\nwant:\n%s", strings.Join(tt.args, " "), got, err, tt.want)
		}
	}
	mod, _ := os.ReadFile("hello/module.go")
	if !strings.Contains(string(mod), "\tqueue.Register[Greet](newGreetHandler),\n\tqueue.Register[Wave](newWaveHandler),\n\t// navree:jobs") {
		t.Fatalf("hello/module.go:\n%s", mod)
	}
	modules, _ := os.ReadFile("modules/modules.go")
	if !strings.Contains(string(modules), "\t\thello.Module,\n\t\tcontacts.Module,\n\t\tbilling.Module,\n\t\treports.Module,\n\t\tledger.Module,\n\t\t// navree:modules") ||
		!strings.Contains(string(modules), "\t\"example.com/crm/billing\"\n\t\"example.com/crm/contacts\"\n\t\"example.com/crm/hello\"\n\t\"example.com/crm/ledger\"\n\t\"example.com/crm/reports\"\n)") {
		t.Fatalf("modules/modules.go:\n%s", modules)
	}
	job, _ := os.ReadFile("contacts/sync_calendar.go")
	if !strings.Contains(string(job), `func (SyncCalendar) JobName() string { return "contacts.sync_calendar" }`) {
		t.Fatalf("contacts/sync_calendar.go:\n%s", job)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"make:job", "hello", "wave"}, "make:job: hello/wave.go exists: choose another name, or remove it"},
		{[]string{"make:job", "hello", "Wave"}, `make:job: the name "Wave" must be a Go identifier in lower snake case, not a keyword, such as export`},
		{[]string{"make:job", "hello", "func"}, `make:job: the name "func" must be a Go identifier in lower snake case, not a keyword, such as export`},
		{[]string{"make:job", "hello"}, "make:job takes a module and a job name, such as: navree make:job contacts export"},
		{[]string{"make:module"}, "make:module takes the module's name, such as: navree make:module contacts"},
		{[]string{"make:module", "billing"}, "make:module: billing/module.go exists: choose another name, or add to that module with navree make:job, make:listener, make:notification or make:mail"},
		{[]string{"make:listener", "contacts", "--event", "contact_created"}, "make:listener takes a module, a listener name and its event, such as: navree make:listener contacts send_welcome --event contact_created"},
		{[]string{"make:listener", "contacts", "send_welcome", "--event", "contact_created"}, "make:listener: contacts/send_welcome.go exists: choose another name, or remove it"},
		{[]string{"make:listener", "billing", "greet_payer", "--event", "invoice_paid"}, `make:listener: billing/invoice_paid.go declares InvoicePaid without an EventName method, so it is no event: add func (InvoicePaid) EventName() string { return "billing.invoice_paid" } there, or choose another event`},
		{[]string{"make:listener", "contacts", "bill", "--event", "billing.account_opened"}, "make:listener: billing imports contacts, so contacts cannot import billing to listen to billing.account_opened (an import cycle): put the listener in billing (navree make:listener billing bill --event account_opened)"},
		{[]string{"make:notification", "billing"}, "make:notification takes a module and a notification name, such as: navree make:notification billing invoice_paid"},
		{[]string{"make:notification", "billing", "invoice_paid"}, "make:notification: billing/invoice_paid.go exists: choose another name, or remove it"},
		{[]string{"make:mail", "contacts"}, "make:mail takes a module and a mail name, such as: navree make:mail contacts welcome"},
		{[]string{"make:mail", "billing", "welcome"}, "make:mail: contacts/mail/welcome.html.tmpl is a template mail/welcome too, and the app's modules share one set of template names (two of one name fail the boot): choose another name"},
		{[]string{"make:migration", "contacts"}, "make:migration takes a module and a migration name, such as: navree make:migration contacts create_contacts"},
		{[]string{"make:migration", "contacts", "create_contacts"}, "make:migration: contacts/migrations/0001_create_contacts.down.sql is a migration create_contacts already: choose another name"},
		{[]string{"make:migration", "contacts", "AddPhone"}, `make:migration: the name "AddPhone" must be in lower snake case, such as create_contacts`},
		{[]string{"make:migration", "notifications", "create_digests"}, "make:migration: the framework has a migration set named notifications, the name of notifications's set (migrate refuses two sets of one name): put the migration in a module of another name"},
		{[]string{"make:command", "contacts"}, "make:command takes a module and a command name, such as: navree make:command contacts import"},
		{[]string{"make:command", "contacts", "import"}, "make:command: contacts/import_command.go has a command contacts:import already: choose another name"},
		{[]string{"make:command", "Contacts", "import"}, `make:command: the module "Contacts" must be a Go identifier in lower snake case, not a keyword, such as contacts`},
	} {
		if _, err := navree(tt.args...); err == nil || err.Error() != tt.want {
			t.Errorf("navree %s: %v\nwant %s", strings.Join(tt.args, " "), err, tt.want)
		}
	}
	if err := os.WriteFile("hello/module.go", []byte("package hello\n\nvar Module = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := navree("make:job", "hello", "bye"); err == nil || err.Error() != `make:job: hello/module.go has no line "// navree:jobs" to add the job above: add queue.Register[Bye](newByeHandler), to its fx.Module by hand, and import "github.com/navree/navree/queue"` {
		t.Fatalf("a module.go without the anchor: %v", err)
	}
	if _, err := navree("make:command", "hello", "bye"); err == nil || err.Error() != `make:command: hello/module.go declares no var Module = fx.Module(…) to add the command to: add app.Commands(byeCommand) to its Module by hand, and import "github.com/navree/navree/app"` {
		t.Fatalf("a module.go without fx.Module: %v", err)
	}
	if _, err := navree("make:migration", "hello", "create_byes"); err == nil || err.Error() != `make:migration: hello/module.go declares no var Module = fx.Module(…) to add the migration set to: add db.Migrations("hello", migrations()) to its Module by hand, and import "github.com/navree/navree/db"` {
		t.Fatalf("a module.go without fx.Module: %v", err)
	}
	for _, f := range []string{"hello/bye.go", "hello/bye_command.go", "hello/migrations"} {
		if _, err := os.Stat(f); err == nil {
			t.Fatalf("a refused make:* wrote %s", f)
		}
	}
	os.WriteFile("hello/module.go", mod, 0o644)
	downloadsEnough(t, ".")
	goChecks(t, ".", "after the make:* commands")
}
