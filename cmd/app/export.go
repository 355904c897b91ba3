package main

import (
	"context"
	"embed"
	"encoding/csv"
	"encoding/json"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/config"
	"github.com/navree/navree/db"
	"github.com/navree/navree/events"
	"github.com/navree/navree/mail"
	"github.com/navree/navree/notify"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/schedule"
	"go.uber.org/fx"
)

// The spec's first example job: it builds a CSV of a company's contacts
// and tells whoever asked, by mail and in their inbox: a notification
// whose two deliveries are notify.send jobs. With the default [mail]
// transport, log, the mail is logged, not sent: set transport = "smtp" to
// send it. GET /notifications lists the signed-in user's inbox (signin.go
// says who is signed in).

// ExportContacts exports the contacts of a company.
type ExportContacts struct {
	Company     string `json:"company"`
	RequestedBy user   `json:"requested_by"`
}

// user is who asks for exports: a notifiable.
type user struct {
	ID    string `json:"id"`
	Email string `json:"email"`
}

func (u user) NotifiableType() string { return "user" }
func (u user) NotifiableID() string   { return u.ID }
func (u user) RouteFor(channel string) string {
	if channel == notify.Mail {
		return u.Email
	}
	return ""
}

// ExportReady tells a user their export is ready, by mail and in their
// inbox.
type ExportReady struct {
	Company string `json:"company"`
	Rows    int    `json:"rows"`
	URL     string `json:"url"`
}

func (ExportReady) NotificationType() string       { return "contacts.export_ready" }
func (ExportReady) Via(notify.Notifiable) []string { return []string{notify.Mail, notify.Database} }

func (n ExportReady) ToMail(ctx context.Context, to notify.Notifiable) (mail.Mail, error) {
	return mail.Template(to.RouteFor(notify.Mail), "Your export is ready", "mail/export-ready").
		With(map[string]any{"Company": n.Company, "Rows": n.Rows, "URL": n.URL}), nil
}

func (n ExportReady) ToDatabase(notify.Notifiable) (any, error) { return n, nil }

func (ExportContacts) JobName() string { return "contacts.export" }

//go:embed mail
var mailTemplates embed.FS

// exportsDir is where exports are written: var/exports of the app folder,
// beside the SQLite default.
func exportsDir(c *config.Config) string { return filepath.Join(c.Root(), "var", "exports") }

// demoContacts are the contacts every demo company has.
var demoContacts = [][]string{{"name", "email"}, {"Ada Lovelace", "ada@example.com"}, {"Grace Hopper", "grace@example.com"}}

type exportHandler struct {
	dir      string // exportsDir
	db       *db.DB
	notifier *notify.Notifier
	bus      *events.Bus
	http     app.HTTPConfig
}

// ContactsExported is the event of a finished export.
type ContactsExported struct {
	Company string `json:"company"`
	File    string `json:"file"` // in var/exports
	Rows    int    `json:"rows"`
}

func (ContactsExported) EventName() string { return "contacts.exported" }

// Handle writes var/exports/JOB_ID.csv and notifies the user who asked.
func (h exportHandler) Handle(ctx context.Context, job ExportContacts, jc queue.JobContext) error {
	if err := os.MkdirAll(h.dir, 0o755); err != nil {
		return err
	}
	name := jc.JobID + ".csv"
	f, err := os.Create(filepath.Join(h.dir, name))
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	w.WriteAll(demoContacts)
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	ready := ExportReady{Company: job.Company, Rows: len(demoContacts) - 1, URL: "http://" + h.http.Addr + "/exports/" + name}
	// One unit of work: should a listener fail, the attempt queues no
	// notification and no listener job, and its retry does not tell the
	// user twice.
	return h.db.Transaction(ctx, func(ctx context.Context) error {
		if _, err := h.notifier.Send(ctx, []notify.Notifiable{job.RequestedBy}, ready); err != nil {
			return err
		}
		return h.bus.Dispatch(ctx, ContactsExported{Company: job.Company, File: name, Rows: ready.Rows})
	})
}

// pruneAfter is how long exports are kept.
const pruneAfter = 7 * 24 * time.Hour

// pruneExports deletes the exports older than pruneAfter: a queued
// listener of contacts.exported, so an export never waits for it.
func pruneExports(clock app.Clock, c *config.Config) events.Handler[ContactsExported] {
	return events.HandlerFunc[ContactsExported](func(ctx context.Context, e ContactsExported, jc queue.JobContext) error {
		return prune(exportsDir(c), clock.Now())
	})
}

// PruneExports deletes the old exports: the nightly entry exports.prune.
type PruneExports struct{}

func (PruneExports) JobName() string { return "exports.prune" }

// prune deletes the exports in dir older than pruneAfter at now.
func prune(dir string, now time.Time) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, entry := range entries {
		info, err := entry.Info()
		if err == nil && now.Sub(info.ModTime()) > pruneAfter {
			if err := os.Remove(filepath.Join(dir, entry.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

var exportModule = fx.Module("export",
	queue.Register[ExportContacts](func(d *db.DB, n *notify.Notifier, b *events.Bus, h app.HTTPConfig, c *config.Config) queue.Handler[ExportContacts] {
		return exportHandler{dir: exportsDir(c), db: d, notifier: n, bus: b, http: h}
	}),
	notify.Register[ExportReady](),
	fx.Provide(app.AsRoute(newInboxRoute)),
	events.Sync[ContactsExported]("audit.record_export", func(logger *slog.Logger) func(context.Context, ContactsExported) error {
		audit := logger.With("logger", "audit")
		return func(ctx context.Context, e ContactsExported) error {
			audit.InfoContext(ctx, "contacts exported", "company", e.Company, "rows", e.Rows, "file", e.File)
			return nil
		}
	}),
	events.Listen[ContactsExported]("exports.prune", pruneExports),
	// Nightly too, for exports no new export's event prunes.
	queue.Register[PruneExports](func(clock app.Clock, c *config.Config) queue.Handler[PruneExports] {
		return queue.HandlerFunc[PruneExports](func(ctx context.Context, _ PruneExports, _ queue.JobContext) error {
			return prune(exportsDir(c), clock.Now())
		})
	}),
	schedule.Cron("exports.prune", "0 3 * * *", PruneExports{}),
	// The framework's housekeeping, each a job of its module.
	schedule.Cron("queue.prune_failed", "0 4 * * *", queue.PruneFailedJob{OlderThanHours: 7 * 24}),
	schedule.Cron("notify.prune", "30 4 * * *", notify.PruneJob{ReadOlderThanHours: 30 * 24}),
	mail.Templates(mailTemplates),
	mail.Previews(mail.Preview{Name: "export-ready", Func: func(context.Context) (mail.Mail, error) {
		return mail.Template("ada@example.com", "Your export is ready", "mail/export-ready").With(map[string]any{
			"Company": "Acme", "Rows": 2, "URL": "http://127.0.0.1:8080/exports/0190f1e2-demo.csv",
		}), nil
	}}),
	fx.Provide(app.AsRoute(func(c *config.Config) app.Route {
		dir := exportsDir(c)
		return app.Route{Pattern: "GET /exports/{file}", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			file := filepath.Base(r.PathValue("file")) // no way out of the folder
			w.Header().Set("Content-Type", "text/csv; charset=utf-8")
			http.ServeFile(w, r, filepath.Join(dir, file))
		})}
	})),
)

// notSignedIn is what the inbox answers a request signed in as no one.
const notSignedIn = "Forbidden: not signed in. The inbox shows the notifications of the signed-in user; " +
	"this example app signs in only in development, at /dev/sign-in?user=NAME."

// newInboxRoute lists the signed-in user's notifications, newest first.
// Whose they are comes from the request's identity (signedIn), not from
// its path: a path names anyone's inbox.
func newInboxRoute(inbox *notify.Inbox, logger *slog.Logger) app.Route {
	page := template.Must(template.New("inbox").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Notifications of {{.User}}</title></head>
<body><h1>Notifications of {{.User}}</h1><p>{{.Unread}} unread</p>
{{range .Items}}<p>{{if .Unread}}<strong>new</strong> {{end}}{{.Created}}: your export of {{.Company}} is ready ({{.Rows}} contacts): <a href="{{.URL}}">download it</a></p>
{{else}}<p>No notifications.</p>{{end}}
</body></html>
`))
	type item struct {
		ExportReady
		Created string
		Unread  bool
	}
	return app.Route{Pattern: "GET /notifications", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok := signedIn(r.Context())
		if !ok {
			http.Error(w, notSignedIn, http.StatusForbidden)
			return
		}
		stored, _, err := inbox.List(r.Context(), u, notify.ListQuery{})
		var unread int
		if err == nil {
			unread, err = inbox.UnreadCount(r.Context(), u)
		}
		if err != nil { // the database's words stay in the log
			logger.ErrorContext(r.Context(), "list notifications", "error", err)
			http.Error(w, "The inbox could not be read; the app's log has the error.", http.StatusInternalServerError)
			return
		}
		var items []item
		for _, s := range stored {
			var ready ExportReady
			if s.Type != (ExportReady{}).NotificationType() || json.Unmarshal(s.Data, &ready) != nil {
				continue
			}
			items = append(items, item{ExportReady: ready, Created: s.CreatedAt.UTC().Format("2006-01-02 15:04"), Unread: s.ReadAt.IsZero()})
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		page.Execute(w, map[string]any{"User": u.ID, "Unread": unread, "Items": items})
	})}
}
