package docs

// pageContext holds, by page, what its snippets leave to the reader's
// app: its own types, functions and values, which a page names but does
// not show (a CRM's export, its calendar sync, its users). A snippet that
// declares one of these names itself uses its own.
var pageContext = map[string]string{
	"README.md": `
type exportHandler struct{}

func buildExport(ctx context.Context, companyID string) error { return nil }
`,

	"docs/dashboard.md": `
func access(r *http.Request) dashboard.Role { return dashboard.Viewer }

type user struct{ Admin bool }

func currentUser(r *http.Request) (user, bool) { return user{}, false }
`,

	"docs/events.md": `
type ExportContacts struct{ CompanyID string }

func (ExportContacts) JobName() string { return "contacts.export" }

type ContactsExported struct {
	CompanyID string
	Rows      int
}

func (ContactsExported) EventName() string { return "contacts.exported" }

type ContactsImported struct {
	CompanyID string
	Rows      int
}

func (ContactsImported) EventName() string { return "contacts.imported" }

type ExportFailed struct{}

func (ExportFailed) EventName() string { return "contacts.export_failed" }

type exportHandler struct {
	db  *db.DB
	bus *events.Bus
}

type importHandler struct{ bus *events.Bus }

type ownerNotifier struct {
	mailer *mail.Mailer
	db     *db.DB
}

func (*ownerNotifier) Handle(context.Context, ContactsExported, queue.JobContext) error { return nil }

var (
	id, n  = "c1", 2
	qcfg   queue.Config
	logger *slog.Logger
)

func buildExport(context.Context, *db.DB, string) (int, error)        { return 0, nil }
func countExport(context.Context, string, int) error                   { return nil }
func touchCompany(context.Context, string) error                       { return nil }
func callWebhook(context.Context, ContactsExported) error              { return nil }
func recordExport(context.Context, ContactsExported) error             { return nil }
`,

	"docs/getting-started.md": `
type Exports struct{}

func NewExports(*db.DB) *Exports                                   { return &Exports{} }
func (*Exports) Build(ctx context.Context, companyID string) error { return nil }

type Export struct{ CompanyID string }

func (Export) JobName() string { return "contacts.export" }

type exportHandler struct{}

func (exportHandler) Handle(ctx context.Context, job Export, jc queue.JobContext) error { return nil }
func newExportHandler(*Exports) queue.Handler[Export]                                 { return exportHandler{} }

type Importer struct{}

func NewImporter() *Importer                                            { return &Importer{} }
func (*Importer) Import(ctx context.Context, file string) (int, error) { return 0, nil }

func exportAll(context.Context, *db.DB, *queue.Queue) error { return nil }

var csvColumns = []string{"name", "email"}

var healthz http.HandlerFunc

func newCreateHandler(*db.DB) http.Handler { return nil }

var myFixedClock = apptest.FixedClock(time.Now())

type Exporter struct{ bucket string }

type cache struct{}

func (cache) Forget(int64) {}

type Contacts struct {
	db    *db.DB
	cache cache
}
`,

	"docs/mail.md": `
type ExportContacts struct {
	CompanyID   string
	RequestedBy string
}

func (ExportContacts) JobName() string { return "contacts.export" }

func buildExport(context.Context, string) (string, error) { return "", nil }

var (
	cfg, mcfg     mail.Config
	qcfg          queue.Config
	mailTemplates fs.FS
	csv, logo     []byte
	url           string
	msg           mail.Mail
	err           error
)
`,

	"docs/notifications.md": `
type ExportReady struct {
	Company string
	Rows    int
	URL     string
}

func (ExportReady) NotificationType() string       { return "contacts.export_ready" }
func (ExportReady) Via(notify.Notifiable) []string { return []string{notify.Mail, notify.Database} }

type TrialEnding struct {
	Plan string
	Days int
}

func (TrialEnding) NotificationType() string       { return "billing.trial_ending" }
func (TrialEnding) Via(notify.Notifiable) []string { return []string{notify.Mail, notify.Database} }

type ExportFailed struct{}

func (ExportFailed) NotificationType() string       { return "contacts.export_failed" }
func (ExportFailed) Via(notify.Notifiable) []string { return nil }

type OpsAlert struct{ Text string }

func (OpsAlert) NotificationType() string       { return "ops.alert" }
func (OpsAlert) Via(notify.Notifiable) []string { return []string{notify.Mail, notify.Log, "sms"} }

type PasswordReset struct{}

type VerificationCode struct{}

func (VerificationCode) NotificationType() string       { return "auth.verification_code" }
func (VerificationCode) Via(notify.Notifiable) []string { return []string{"sms"} }

type ContactsExported struct {
	Company, File string
	Rows          int
}

func (ContactsExported) EventName() string { return "contacts.exported" }

type textGateway struct{}

func newTextGateway() *textGateway                                   { return &textGateway{} }
func (*textGateway) SendText(ctx context.Context, to, text string) error { return nil }

type recipient struct{ id string }

func (r recipient) NotifiableType() string { return "member" }
func (r recipient) NotifiableID() string   { return r.id }
func (r recipient) RouteFor(string) string { return "" }

// As package notify declares them, for the page's excerpt of it.
type (
	Notifiable   = notify.Notifiable
	Notification = notify.Notification
)

type exportJob struct {
	RequestedBy recipient
	Company     string
}

type exportHandler struct {
	db       *db.DB
	notifier *notify.Notifier
	bus      *events.Bus
}

type item struct {
	ExportReady
	Created string
	Unread  bool
}

type userKey struct{}

var (
	ada, grace, user, u notify.Notifiable = recipient{"ada"}, recipient{"grace"}, recipient{"ada"}, recipient{"ada"}
	id1, id2            string
	upgraded            map[string]bool
	h                   exportHandler
	job                 exportJob
	name                string
	ready               ExportReady
	items               []item
	next                http.Handler
	err                 error
	logger              *slog.Logger
	mailTemplates       fs.FS
	mcfg                mail.Config
	qcfg                queue.Config
)

const notSignedIn = "Forbidden: not signed in."

func userOf(*http.Request) (notify.Notifiable, bool)          { return nil, false }
func signedIn(context.Context) (notify.Notifiable, bool)      { return nil, false }
`,

	"docs/operations.md": `
var (
	exporter     sdkmetric.Exporter
	spanExporter sdktrace.SpanExporter
)
`,

	"docs/flow-control.md": `
type exportHandler struct{}

func (*exportHandler) reportReady(ctx context.Context, companyID string) (bool, error) { return true, nil }
func (*exportHandler) send(ctx context.Context, companyID string) error                 { return nil }

func newReindexer() {}

type crmClient struct{}

func (crmClient) Push(ctx context.Context, accountID string) error    { return nil }
func (crmClient) Confirm(ctx context.Context, accountID string) error { return nil }

type pushHandler struct{ crm crmClient }

type PushToCRM struct{ AccountID string }
`,

	"docs/workflows.md": `
type job struct{ CompanyID, AccountID, Path string }

type (
	ImportFile         struct{ Path string }
	DedupeContacts     struct{ CompanyID string }
	MailImportReport   struct{ CompanyID string }
	MailImportFailed   struct{ CompanyID string }
	EnrichContact      struct{ ContactID string }
	MailEnrichReport   struct{ CompanyID string }
	MailEnrichFailed   struct{ CompanyID string }
	UnlockCompany      struct{ CompanyID string }
	FetchLogo          struct{ AccountID string }
	ResizeLogo         struct{ AccountID string }
	ScanLogo           struct{ AccountID string }
	PublishLogo        struct{ AccountID string }
	AuditLogo          struct{ AccountID string }
	NotifyOnboarded    struct{ AccountID string }
	RebuildSearchIndex struct{ CompanyID string }
	ContactsImported   struct{ CompanyID string }
	ImportResult       struct{ Rows int }
)

func (ImportFile) JobName() string         { return "contacts.import_file" }
func (DedupeContacts) JobName() string     { return "contacts.dedupe" }
func (MailImportReport) JobName() string   { return "contacts.mail_import_report" }
func (MailImportFailed) JobName() string   { return "contacts.mail_import_failed" }
func (EnrichContact) JobName() string      { return "contacts.enrich" }
func (MailEnrichReport) JobName() string   { return "contacts.mail_enrich_report" }
func (MailEnrichFailed) JobName() string   { return "contacts.mail_enrich_failed" }
func (UnlockCompany) JobName() string      { return "contacts.unlock_company" }
func (FetchLogo) JobName() string          { return "accounts.fetch_logo" }
func (ResizeLogo) JobName() string         { return "accounts.resize_logo" }
func (ScanLogo) JobName() string           { return "accounts.scan_logo" }
func (PublishLogo) JobName() string        { return "accounts.publish_logo" }
func (AuditLogo) JobName() string          { return "accounts.audit_logo" }
func (NotifyOnboarded) JobName() string    { return "accounts.notify_onboarded" }
func (RebuildSearchIndex) JobName() string { return "search.rebuild_index" }
func (ContactsImported) EventName() string { return "contacts.imported" }

type importFileHandler struct{}

func (importFileHandler) importRows(ctx context.Context, path string) (int, error) { return 0, nil }

type mailImportReportHandler struct{}

func (mailImportReportHandler) mailReport(ctx context.Context, companyID string, rows int) error { return nil }

var contactIDs []string
`,

	"docs/queues.md": `
type ExportContacts struct {
	CompanyID   uuid.UUID
	RequestedBy string
}

func (ExportContacts) JobName() string { return "contacts.export" }

type Export = ExportContacts

type ExportDeals struct{ CompanyID, Format string }

func (ExportDeals) JobName() string { return "deals.export" }

type SyncCalendar struct{ UserID string }

func (SyncCalendar) JobName() string { return "calendar.sync" }

type UserSignedUp struct{}

type exportHandler struct {
	db     *db.DB
	mailer *mail.Mailer
}

func (*exportHandler) Handle(context.Context, ExportContacts, queue.JobContext) error { return nil }

type rowsOf struct{}

func (rowsOf) Next() bool { return false }

var (
	h             exportHandler
	job           queue.Job
	id            string
	first, second uuid.UUID
	payload       []byte
	rows          rowsOf
	qcfg          queue.Config
	mcfg          mail.Config
	logger        *slog.Logger
	listeners     []events.Listener
)

func buildExport(context.Context, *db.DB, uuid.UUID) (string, error) { return "", nil }
func exportReady(to, url string) mail.Message                         { return mail.Message{} }
func syncCalendar(context.Context, string) error                      { return nil }
func sendWelcome(context.Context, UserSignedUp) error                 { return nil }
`,

	"docs/scheduling.md": `
type NightlyReport struct{}

func (NightlyReport) JobName() string { return "reports.nightly" }

type SyncContacts struct{}

func (SyncContacts) JobName() string { return "contacts.sync" }

type MorningReminders struct{}

func (MorningReminders) JobName() string { return "crm.morning_reminders" }

type DailyDigest struct{ Day string }

func (DailyDigest) JobName() string { return "crm.daily_digest" }

var holidays map[string]bool

func sendNightlyReport(context.Context, NightlyReport, queue.JobContext) error { return nil }
func syncContacts(context.Context, SyncContacts, queue.JobContext) error       { return nil }
`,

	"docs/testing.md": `
type SendReminder struct{ ID int }

func (SendReminder) JobName() string { return "crm.send_reminder" }

type SyncCalendar struct{ UserID string }

func (SyncCalendar) JobName() string { return "calendar.sync" }

type ExportContacts struct{}

func (ExportContacts) JobName() string { return "contacts.export" }
`,
}
