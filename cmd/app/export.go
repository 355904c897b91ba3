package main

import (
	"context"
	"embed"
	"encoding/csv"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/db"
	"github.com/navree/navree/events"
	"github.com/navree/navree/mail"
	"github.com/navree/navree/queue"
	"go.uber.org/fx"
)

// The spec's first example job: it builds a CSV of a company's contacts
// and mails the link to whoever asked, through the queue (mail.Queue
// pushes a mail.send job). With the default [mail] transport, log, the
// mail is logged, not sent: set transport = "smtp" to send it.

// ExportContacts exports the contacts of a company.
type ExportContacts struct {
	Company     string `json:"company"`
	RequestedBy string `json:"requested_by"`
}

func (ExportContacts) JobName() string { return "contacts.export" }

//go:embed mail
var mailTemplates embed.FS

// exportsDir is where exports are written, beside the SQLite default.
const exportsDir = "var/exports"

// demoContacts are the contacts every demo company has.
var demoContacts = [][]string{{"name", "email"}, {"Ada Lovelace", "ada@example.com"}, {"Grace Hopper", "grace@example.com"}}

type exportHandler struct {
	db     *db.DB
	mailer *mail.Mailer
	bus    *events.Bus
	http   app.HTTPConfig
}

// ContactsExported is the event of a finished export.
type ContactsExported struct {
	Company string `json:"company"`
	File    string `json:"file"` // in var/exports
	Rows    int    `json:"rows"`
}

func (ContactsExported) EventName() string { return "contacts.exported" }

// Handle writes var/exports/JOB_ID.csv and queues the mail with its link.
func (h exportHandler) Handle(ctx context.Context, job ExportContacts, jc queue.JobContext) error {
	if err := os.MkdirAll(exportsDir, 0o755); err != nil {
		return err
	}
	name := jc.JobID + ".csv"
	f, err := os.Create(filepath.Join(exportsDir, name))
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
	msg := mail.Template(job.RequestedBy, "Your export is ready", "mail/export-ready").With(map[string]any{
		"Company": job.Company, "Rows": len(demoContacts) - 1, "URL": "http://" + h.http.Addr + "/exports/" + name,
	})
	// One unit of work: should a listener fail, the attempt queues no mail
	// and no listener job, and its retry does not send the link twice.
	return h.db.Transaction(ctx, func(ctx context.Context) error {
		if _, err := h.mailer.Queue(ctx, msg); err != nil {
			return err
		}
		return h.bus.Dispatch(ctx, ContactsExported{Company: job.Company, File: name, Rows: len(demoContacts) - 1})
	})
}

// pruneAfter is how long exports are kept.
const pruneAfter = 7 * 24 * time.Hour

// pruneExports deletes the exports older than pruneAfter: a queued
// listener of contacts.exported, so an export never waits for it.
func pruneExports(clock app.Clock) events.Handler[ContactsExported] {
	return events.HandlerFunc[ContactsExported](func(ctx context.Context, e ContactsExported, jc queue.JobContext) error {
		entries, err := os.ReadDir(exportsDir)
		if err != nil {
			return err
		}
		for _, entry := range entries {
			info, err := entry.Info()
			if err == nil && clock.Now().Sub(info.ModTime()) > pruneAfter {
				if err := os.Remove(filepath.Join(exportsDir, entry.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return err
				}
			}
		}
		return nil
	})
}

var exportModule = fx.Module("export",
	queue.Register[ExportContacts](func(d *db.DB, m *mail.Mailer, b *events.Bus, c app.HTTPConfig) queue.Handler[ExportContacts] {
		return exportHandler{db: d, mailer: m, bus: b, http: c}
	}),
	events.SyncWith[ContactsExported]("audit.record_export", func(logger *slog.Logger) func(context.Context, ContactsExported) error {
		audit := logger.With("logger", "audit")
		return func(ctx context.Context, e ContactsExported) error {
			audit.InfoContext(ctx, "contacts exported", "company", e.Company, "rows", e.Rows, "file", e.File)
			return nil
		}
	}),
	events.Listen[ContactsExported]("exports.prune", pruneExports),
	mail.Templates(mailTemplates),
	mail.Previews(mail.Preview{Name: "export-ready", Func: func(context.Context) (mail.Mail, error) {
		return mail.Template("ada@example.com", "Your export is ready", "mail/export-ready").With(map[string]any{
			"Company": "Acme", "Rows": 2, "URL": "http://127.0.0.1:8080/exports/0190f1e2-demo.csv",
		}), nil
	}}),
	app.Routes(app.Route{Pattern: "GET /exports/{file}", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		file := filepath.Base(r.PathValue("file")) // no way out of the folder
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		http.ServeFile(w, r, filepath.Join(exportsDir, file))
	})}),
)
