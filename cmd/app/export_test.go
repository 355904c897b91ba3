package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/navree/navree/mail"
	"github.com/navree/navree/mail/mailtest"
	"github.com/navree/navree/notify"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/testing/apptest"
	"go.uber.org/fx"
)

// eachTestDatabase runs f as the subtests "sqlite" and "postgres", with
// the apptest option of a fresh database of each.
func eachTestDatabase(t *testing.T, f func(t *testing.T, database fx.Option)) {
	t.Run("sqlite", func(t *testing.T) { f(t, apptest.TempDatabase()) })
	t.Run("postgres", func(t *testing.T) { f(t, apptest.Postgres()) })
}

// get GETs path from a as the browser whose cookie is cookie ("" for
// none).
func get(a *apptest.App, path, cookie string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", path, nil)
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, req)
	return rec
}

// signIn signs in as id with the development sign-in and returns the
// browser's cookie.
func signIn(t *testing.T, a *apptest.App, id string) string {
	t.Helper()
	rec := get(a, "/dev/sign-in?user="+id, "")
	cookies := rec.Result().Cookies()
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/notifications" || len(cookies) != 1 {
		t.Fatalf("GET /dev/sign-in?user=%s = %d to %q, cookies %v", id, rec.Code, rec.Header().Get("Location"), cookies)
	}
	return cookies[0].Name + "=" + cookies[0].Value
}

// TestExportNotifiesTheRequester runs the example app in the test: the
// export mails its link and lands in the requester's inbox, whose page
// lists it to her, signed in, and to no one else; marking it read changes
// the page.
func TestExportNotifiesTheRequester(t *testing.T) {
	eachTestDatabase(t, func(t *testing.T, database fx.Option) {
		t.Chdir(t.TempDir()) // the export writes var/exports here
		var q *queue.Queue
		var mailer *mail.Mailer
		var inbox *notify.Inbox
		a := apptest.New(t, append(modules(), database,
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
		exports, _ := os.ReadDir(filepath.Join("var", "exports"))
		if len(exports) != 1 {
			t.Fatalf("exports %v", exports)
		}
		url := "http://127.0.0.1:8080/exports/" + exports[0].Name()
		mailtest.AssertSent(t, mailer, func(m mailtest.Message) bool {
			return m.Subject == "Your export is ready" && strings.Join(m.Envelope.To, ",") == "ada@example.com" && strings.Contains(m.Text, url)
		})
		asAda := signIn(t, a, "ada")
		page := func() string {
			rec := get(a, "/notifications", asAda)
			if rec.Code != 200 {
				t.Fatalf("GET /notifications as ada = %d %s", rec.Code, rec.Body)
			}
			return rec.Body.String()
		}
		if got := page(); !strings.Contains(got, "<h1>Notifications of ada</h1><p>1 unread</p>") || !strings.Contains(got, `<strong>new</strong> `) ||
			!strings.Contains(got, `: your export of Acme is ready (2 contacts): <a href="`+url+`">download it</a></p>`) {
			t.Fatalf("the inbox page:\n%s", got)
		}
		if n, err := inbox.MarkAllRead(ctx, ada); err != nil || n != 1 {
			t.Fatalf("MarkAllRead = %d, %v", n, err)
		}
		if got := page(); !strings.Contains(got, "<p>0 unread</p>") || strings.Contains(got, "<strong>new</strong>") {
			t.Fatalf("after MarkAllRead:\n%s", got)
		}
		// Grace, signed in, sees her own inbox, and no path shows her ada's.
		asGrace := signIn(t, a, "grace")
		if rec := get(a, "/notifications", asGrace); rec.Code != 200 || !strings.Contains(rec.Body.String(), "<h1>Notifications of grace</h1><p>0 unread</p>") ||
			!strings.Contains(rec.Body.String(), "<p>No notifications.</p>") {
			t.Fatalf("grace's inbox: %d\n%s", rec.Code, rec.Body)
		}
		if rec := get(a, "/users/ada/notifications", asGrace); rec.Code != http.StatusNotFound {
			t.Fatalf("GET /users/ada/notifications as grace = %d\n%s", rec.Code, rec.Body)
		}
	})
}

// TestTheWelcomePagesSignInLinkAsksWhoToSignInAs: the welcome page links
// /dev/sign-in, which without ?user answers a form asking for the user
// (it answered 400, Invalid user ""); the form's request signs in.
func TestTheWelcomePagesSignInLinkAsksWhoToSignInAs(t *testing.T) {
	a := apptest.New(t, append(modules(), apptest.TempDatabase())...)
	if rec := get(a, "/", ""); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `<li><a href="/dev/sign-in">/dev/sign-in</a></li>`) {
		t.Fatalf("GET / = %d, want a link to /dev/sign-in:\n%s", rec.Code, rec.Body)
	}
	rec := get(a, "/dev/sign-in", "")
	for _, want := range []string{`<form method="get" action="/dev/sign-in">`, `<input name="user" value="ada" required maxlength="64"`, "<button>Sign in</button>"} {
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "text/html; charset=utf-8" || !strings.Contains(rec.Body.String(), want) {
			t.Fatalf("GET /dev/sign-in = %d %q, want 200 and a form with %s:\n%s", rec.Code, rec.Header().Get("Content-Type"), want, rec.Body)
		}
	}
	if len(rec.Result().Cookies()) != 0 {
		t.Fatalf("the form signed in: %v", rec.Result().Cookies())
	}
	if cookie := signIn(t, a, "ada"); cookie != "dev_user=ada" {
		t.Fatalf("the form's request set %q", cookie)
	}
}

// TestTheInboxNeedsASignIn: a request signed in as no one reads no inbox,
// and the development sign-in refuses a user id that is not one, a NUL
// byte included, with 400 and what a user id is, never the database's
// words.
func TestTheInboxNeedsASignIn(t *testing.T) {
	eachTestDatabase(t, func(t *testing.T, database fx.Option) {
		a := apptest.New(t, append(modules(), database)...)
		for _, cookie := range []string{"", "dev_user=", "dev_user=a%00b", "other=ada"} {
			if rec := get(a, "/notifications", cookie); rec.Code != http.StatusForbidden || rec.Body.String() != notSignedIn+"\n" {
				t.Errorf("GET /notifications with cookie %q = %d %q, want 403 %q", cookie, rec.Code, rec.Body, notSignedIn)
			}
		}
		for _, tt := range []struct{ give, want string }{
			{"ada%00", `Invalid user "ada\x00": want 1 to 64 ASCII letters, digits, '-', '_' or '.', such as /dev/sign-in?user=ada.`},
			{"%00", `Invalid user "\x00": want 1 to 64 ASCII letters, digits, '-', '_' or '.', such as /dev/sign-in?user=ada.`},
			{"ada%FF", `Invalid user "ada\xff": want 1 to 64 ASCII letters, digits, '-', '_' or '.', such as /dev/sign-in?user=ada.`},
			{"", `Invalid user "": want 1 to 64 ASCII letters, digits, '-', '_' or '.', such as /dev/sign-in?user=ada.`},
			{"ada%27--", `Invalid user "ada'--": want 1 to 64 ASCII letters, digits, '-', '_' or '.', such as /dev/sign-in?user=ada.`},
		} {
			rec := get(a, "/dev/sign-in?user="+tt.give, "")
			if rec.Code != http.StatusBadRequest || rec.Body.String() != tt.want+"\n" || len(rec.Result().Cookies()) != 0 {
				t.Errorf("GET /dev/sign-in?user=%s = %d %q, want 400 %q", tt.give, rec.Code, rec.Body, tt.want)
			}
		}
	})
}

// TestProductionSignsNoOneIn runs the example app as a process in
// production (APP_ENV=production): it has no sign-in there, so no request
// reads an inbox, by a cookie, the development sign-in or a path, though
// ada has a notification.
func TestProductionSignsNoOneIn(t *testing.T) {
	eachDatabase(t, func(t *testing.T, dir, url string) {
		if err := os.Mkdir(filepath.Join(dir, "config"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "config", "app.production.toml"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		production := func(args ...string) *exec.Cmd {
			cmd := command(dir, url, args...)
			cmd.Env = append(cmd.Env, "APP_ENV=production")
			return cmd
		}
		for _, args := range [][]string{{"migrate"}, {"queue:dispatch", "contacts.export", `{"company":"Acme","requested_by":{"id":"ada","email":"ada@example.com"}}`},
			{"queue:work", "--stop-when-empty"}} {
			out, err := production(args...).Output()
			if err != nil || args[0] == "queue:work" && !strings.HasSuffix(string(out), " 0 failed.\n") {
				t.Fatalf("app %v: %v\n%s", args, err, out)
			}
		}
		serve := production("serve")
		stdout, _ := serve.StdoutPipe()
		serve.Stderr = os.Stderr
		if err := serve.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			serve.Process.Signal(syscall.SIGTERM)
			serve.Wait()
		})
		first, _ := bufio.NewReader(stdout).ReadString('\n')
		base, ok := strings.CutPrefix(strings.TrimSuffix(first, " (Ctrl-C to stop)\n"), "Serving HTTP on ")
		if !ok {
			t.Fatalf("serve printed %q", first)
		}
		for _, tt := range []struct {
			path, cookie string
			status       int
			body         string
		}{
			{"/notifications", "", http.StatusForbidden, notSignedIn + "\n"},
			{"/notifications", "dev_user=ada", http.StatusForbidden, notSignedIn + "\n"},
			{"/dev/sign-in?user=ada", "", http.StatusNotFound, "404 page not found\n"},
			{"/users/ada/notifications", "", http.StatusNotFound, "404 page not found\n"},
			{"/users/ada%00/notifications", "", http.StatusNotFound, "404 page not found\n"},
		} {
			req, err := http.NewRequest("GET", base+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.cookie != "" {
				req.Header.Set("Cookie", tt.cookie)
			}
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status || string(body) != tt.body {
				t.Errorf("GET %s (cookie %q) in production = %d %q, want %d %q", tt.path, tt.cookie, resp.StatusCode, body, tt.status, tt.body)
			}
		}
	})
}
