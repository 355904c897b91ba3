package main

import (
	"context"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/navree/navree/mail"
	"github.com/navree/navree/mail/mailtest"
	"github.com/navree/navree/notify"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/testing/apptest"
	"go.uber.org/fx"
)

// TestExportNotifiesTheRequester runs the example app in the test: the
// export mails its link and lands in the requester's inbox, whose page
// lists it; marking it read changes the page.
func TestExportNotifiesTheRequester(t *testing.T) {
	t.Chdir(t.TempDir()) // the export writes var/exports here
	var q *queue.Queue
	var mailer *mail.Mailer
	var inbox *notify.Inbox
	a := apptest.New(t, append(modules(), apptest.TempDatabase(),
		apptest.Config(map[string]any{"mail": map[string]any{"transport": "memory"}}),
		fx.Populate(&q, &mailer, &inbox))...)
	ctx := context.Background()
	ada := user{ID: "ada", Email: "ada@example.com"}
	if _, err := q.Dispatch(ctx, ExportContacts{Company: "Acme", RequestedBy: ada}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := q.RunPending(ctx); err != nil {
			t.Fatal(err)
		}
	}
	exports, _ := os.ReadDir(exportsDir)
	if len(exports) != 1 {
		t.Fatalf("exports %v", exports)
	}
	url := "http://127.0.0.1:8080/exports/" + exports[0].Name()
	mailtest.AssertSent(t, mailer, func(m mailtest.Message) bool {
		return m.Subject == "Your export is ready" && strings.Join(m.Envelope.To, ",") == "ada@example.com" && strings.Contains(m.Text, url)
	})
	get := func() string {
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, httptest.NewRequest("GET", "/users/ada/notifications", nil))
		if rec.Code != 200 {
			t.Fatalf("GET /users/ada/notifications = %d %s", rec.Code, rec.Body)
		}
		return rec.Body.String()
	}
	page := get()
	if !strings.Contains(page, "<p>1 unread</p>") || !strings.Contains(page, `<strong>new</strong> `) ||
		!strings.Contains(page, `: your export of Acme is ready (2 contacts): <a href="`+url+`">download it</a></p>`) {
		t.Fatalf("the inbox page:\n%s", page)
	}
	if n, err := inbox.MarkAllRead(ctx, ada); err != nil || n != 1 {
		t.Fatalf("MarkAllRead = %d, %v", n, err)
	}
	if page := get(); !strings.Contains(page, "<p>0 unread</p>") || strings.Contains(page, "<strong>new</strong>") {
		t.Fatalf("after MarkAllRead:\n%s", page)
	}
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, httptest.NewRequest("GET", "/users/grace/notifications", nil))
	if !strings.Contains(rec.Body.String(), "<p>No notifications.</p>") {
		t.Fatalf("another user's page:\n%s", rec.Body)
	}
}
