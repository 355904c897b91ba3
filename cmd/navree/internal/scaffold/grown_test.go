package scaffold_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/navree/navree/cmd/navree/internal/scaffold"
)

// grownExport is contacts/export.go grown as an app grows: its handler
// takes the event bus and the notifier, and dispatches an event whose
// queued listeners then run beside it.
const grownExport = `package contacts

import (
	"context"

	"github.com/navree/navree/events"
	"github.com/navree/navree/notify"
	"github.com/navree/navree/queue"
)

// Export exports a company's contacts.
type Export struct {
	CompanyID string ` + "`json:\"company_id\"`" + `
}

// JobName is Export's stable name.
func (Export) JobName() string { return "contacts.export" }

type exportHandler struct {
	bus      *events.Bus
	notifier *notify.Notifier
}

func newExportHandler(bus *events.Bus, notifier *notify.Notifier) queue.Handler[Export] {
	return exportHandler{bus, notifier}
}

// Handle tells the listeners of ContactCreated.
func (h exportHandler) Handle(ctx context.Context, job Export, jc queue.JobContext) error {
	return h.bus.Dispatch(ctx, ContactCreated{})
}
`

// TestAGrownAppBuildsVetsAndPassesItsTests writes a new app against this
// checkout of the framework, runs every generator on it, grows a job's
// handler to take an *events.Bus and a *notify.Notifier and dispatch an
// event, and checks that the app builds, vets and passes its tests (the
// generated ones build the app of modules/modules.go, and check each
// job's own outcome), and that mail:preview shows a mail make:mail wrote.
func TestAGrownAppBuildsVetsAndPassesItsTests(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and tests a generated app")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command: ", err)
	}
	dir := filepath.Join(t.TempDir(), "crm")
	if _, err := scaffold.New(dir, scaffold.App{Module: "example.com/crm", FrameworkPath: root(t)}); err != nil {
		t.Fatal(err)
	}
	for _, generate := range []func() ([]scaffold.Change, error){
		func() ([]scaffold.Change, error) { return scaffold.MakeJob(dir, "contacts", "export") },
		func() ([]scaffold.Change, error) {
			return scaffold.MakeListener(dir, "contacts", "send_welcome", "contact_created")
		},
		func() ([]scaffold.Change, error) { return scaffold.MakeNotification(dir, "contacts", "export_ready") },
		func() ([]scaffold.Change, error) { return scaffold.MakeMail(dir, "contacts", "welcome") },
		func() ([]scaffold.Change, error) { return scaffold.MakeMail(dir, "contacts", "password_reset") },
		func() ([]scaffold.Change, error) { return scaffold.MakeModule(dir, "billing") },
		func() ([]scaffold.Change, error) {
			return scaffold.MakeListener(dir, "billing", "open_account", "contacts.contact_created")
		},
		func() ([]scaffold.Change, error) { return scaffold.MakeJob(dir, "hello", "wave") },
	} {
		changes, err := generate()
		if err != nil {
			t.Fatal(err)
		}
		if err := scaffold.Write(dir, changes); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "contacts", "export.go"), []byte(grownExport), 0o644); err != nil {
		t.Fatal(err)
	}
	tidy(t, dir)
	for _, args := range [][]string{{"build", "-o", "crm", "."}, {"vet", "./..."}, {"test", "-count=1", "./..."}} {
		goIn(t, dir, args...)
	}
	crm := func(args ...string) string {
		cmd := exec.Command(filepath.Join(dir, "crm"), args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("crm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if got := crm("mail:preview"); got != "password_reset\nwelcome\n" {
		t.Errorf("crm mail:preview listed %q, want the previews of both mails", got)
	}
	got := crm("mail:preview", "welcome")
	for _, want := range []string{"To:         ada@example.com\n", "Subject:    Welcome\n", "--- text ---\nWelcome.\n", "--- html ---\n<p>Welcome.</p>"} {
		if !strings.Contains(got, want) {
			t.Errorf("crm mail:preview welcome printed no %q:\n%s", want, got)
		}
	}
}

// tidy runs go mod tidy in the app at dir, which fetches the modules the
// framework needs unless the module cache has them; without the network
// to fetch them the test is skipped.
func tidy(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.Command("go", "mod", "tidy")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err == nil {
		return
	}
	for _, offline := range []string{"dial tcp", "no such host", "GOPROXY=off", "network is unreachable", "connection refused", "i/o timeout", "module lookup disabled"} {
		if strings.Contains(string(out), offline) {
			t.Skipf("go mod tidy in the new app needs the network, or a module cache holding the framework's modules: %s", out)
		}
	}
	t.Fatalf("go mod tidy in the new app: %v\n%s", err, out)
}

// goIn runs the go command with args in dir, failing the test with its
// output.
func goIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s in the new app: %v\n%s", strings.Join(args, " "), err, out)
	}
}
