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

// grownImport is contacts/import_command.go grown to do real work: it
// queues an export of each company, then counts the jobs waiting, and
// prints another line than the one make:command wrote. Its generated
// test still passes.
const grownImport = `package contacts

import (
	"fmt"

	"github.com/navree/navree/app"
	"github.com/navree/navree/db"
	"github.com/navree/navree/queue"
	"github.com/urfave/cli/v2"
	"go.uber.org/fx"
)

type importIn struct {
	fx.In
	DB    *db.DB
	Queue *queue.Queue
}

var importCommand = app.Command{
	Name:  "contacts:import",
	Usage: "Queue an export of each company",
	Action: app.Uses(func(c *cli.Context, p importIn) error {
		for _, id := range []string{"c1", "c2"} {
			if _, err := p.Queue.Dispatch(c.Context, Export{CompanyID: id}); err != nil {
				return err
			}
		}
		var n int
		if err := p.DB.NewRaw("SELECT count(*) FROM jobs").Scan(c.Context, &n); err != nil {
			return err
		}
		fmt.Fprintf(c.App.Writer, "Queued 2 exports; %d job(s) wait.\n", n)
		return nil
	}),
}
`

// The jobs of docs/workflows.md's Results, around its snippet's handlers
// (resultsSnippet): an import that records how many rows it read, and a
// report that reads it when it comes after the import in a chain.
const (
	grownImportFile = `package contacts

import (
	"context"

	"github.com/navree/navree/queue"
)

type ImportFile struct {
	Path string ` + "`json:\"path\"`" + `
}

func (ImportFile) JobName() string { return "contacts.import_file" }

type ImportResult struct {
	Rows int ` + "`json:\"rows\"`" + `
}

type importFileHandler struct{}

func newImportFileHandler() queue.Handler[ImportFile] { return importFileHandler{} }

func (importFileHandler) importRows(ctx context.Context, path string) (int, error) { return 3, nil }
`
	grownMailImportReport = `package contacts

import (
	"context"
	"fmt"

	"github.com/navree/navree/queue"
)

type MailImportReport struct {
	CompanyID string ` + "`json:\"company_id\"`" + `
}

func (MailImportReport) JobName() string { return "contacts.mail_import_report" }

type mailImportReportHandler struct{}

func newMailImportReportHandler() queue.Handler[MailImportReport] { return mailImportReportHandler{} }

func (mailImportReportHandler) mailReport(ctx context.Context, companyID string, rows int) error {
	if rows != 3 {
		return fmt.Errorf("the report of %s read %d rows, want the 3 the import recorded", companyID, rows)
	}
	return nil
}
`
	// grownChainTest runs the import and the report in a chain: the
	// report reads the import's rows (mailReport fails on another count).
	grownChainTest = `package contacts_test

import (
	"context"
	"testing"

	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/queuetest"
	"github.com/navree/navree/testing/apptest"
	"go.uber.org/fx"

	"example.com/crm/contacts"
	"example.com/crm/modules"
)

func TestTheReportReadsTheImportsRows(t *testing.T) {
	var q *queue.Queue
	apptest.New(t, modules.All(), apptest.TempDatabase(), fx.Populate(&q))
	ctx := context.Background()
	id, err := q.DispatchFlow(ctx, queue.Chain(contacts.ImportFile{Path: "contacts.csv"}, contacts.MailImportReport{CompanyID: "c1"}))
	if err != nil {
		t.Fatal(err)
	}
	queuetest.RunPending(t, q)
	if chain, err := q.Inspector().Flow(ctx, id); err != nil || chain.State != "succeeded" {
		t.Fatalf("the chain: %+v, %v", chain, err)
	}
}
`
)

// resultsSnippet is the Go snippet of docs/workflows.md that holds the
// handlers of ImportFile and MailImportReport, split into the two.
func resultsSnippet(t *testing.T) (importFile, mailImportReport string) {
	t.Helper()
	page, err := os.ReadFile(filepath.Join(root(t), "docs", "workflows.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, block := range strings.Split(string(page), "```go\n")[1:] {
		code, _, _ := strings.Cut(block, "```")
		if first, second, ok := strings.Cut(code, "func (h mailImportReportHandler) Handle("); ok && strings.HasPrefix(first, "func (h importFileHandler) Handle(") {
			return first, "func (h mailImportReportHandler) Handle(" + second
		}
	}
	t.Fatal("docs/workflows.md has no snippet of the handlers of ImportFile and then MailImportReport")
	return "", ""
}

// TestAGrownAppBuildsVetsAndPassesItsTests writes a new app against this
// checkout of the framework, runs every generator on it, grows a job's
// handler to take an *events.Bus and a *notify.Notifier and dispatch an
// event, fills a generated command with work that prints another line,
// writes the handlers of docs/workflows.md's Results into two generated
// jobs (whose generated tests dispatch one alone, with no step before
// it), and checks that the app builds, vets and passes its tests (the
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
		func() ([]scaffold.Change, error) { return scaffold.MakeCommand(dir, "contacts", "import") },
		func() ([]scaffold.Change, error) { return scaffold.MakeJob(dir, "contacts", "import_file") },
		func() ([]scaffold.Change, error) { return scaffold.MakeJob(dir, "contacts", "mail_import_report") },
	} {
		changes, err := generate()
		if err != nil {
			t.Fatal(err)
		}
		if err := scaffold.Write(dir, changes); err != nil {
			t.Fatal(err)
		}
	}
	importFile, mailImportReport := resultsSnippet(t)
	for file, src := range map[string]string{"export.go": grownExport, "import_command.go": grownImport,
		"import_file.go": grownImportFile + "\n" + importFile, "mail_import_report.go": grownMailImportReport + "\n" + mailImportReport,
		"report_chain_test.go": grownChainTest} {
		if err := os.WriteFile(filepath.Join(dir, "contacts", file), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
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
	// navree's help in the app's folder lists the commands of its --help.
	commands := scaffold.CommandsOf(crm("--help"))
	for _, want := range []string{"   migrate  ", "\n   contacts:\n     contacts:import  Queue an export of each company\n", "\n     queue:work  "} {
		if !strings.Contains(commands, want) || strings.Contains(commands, "help, h") {
			t.Errorf("the commands of crm --help have no %q (or have its help command):\n%s", want, commands)
		}
	}
	crm("migrate")
	if got := crm("contacts:import"); got != "Queued 2 exports; 2 job(s) wait.\n" {
		t.Errorf("crm contacts:import printed %q", got)
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
