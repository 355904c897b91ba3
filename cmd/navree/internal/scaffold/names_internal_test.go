package scaffold

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestNamesFollowGoInitialisms: the Go names the generators derive from a
// snake-case name spell an initialism of Go's list all in capitals, in
// the exported name, the unexported one (whose first word is all in
// lower case) and the words of a subject.
func TestNamesFollowGoInitialisms(t *testing.T) {
	tests := []struct {
		give                 string
		wantCamel, wantLower string
		wantHuman            string
	}{
		{"export", "Export", "export", "Export"},
		{"sync_calendar", "SyncCalendar", "syncCalendar", "Sync calendar"},
		{"push_to_crm", "PushToCRM", "pushToCRM", "Push to CRM"},
		{"sync_url", "SyncURL", "syncURL", "Sync URL"},
		{"user_id", "UserID", "userID", "User ID"},
		{"user_ids", "UserIDs", "userIDs", "User IDs"},
		{"http_api", "HTTPAPI", "httpAPI", "HTTP API"},
		{"url_sync", "URLSync", "urlSync", "URL sync"},
		{"id", "ID", "id", "ID"},
		{"export_csv", "ExportCSV", "exportCSV", "Export CSV"},
		{"send_sms", "SendSMS", "sendSMS", "Send SMS"},
		{"parse_json_v2", "ParseJSONV2", "parseJSONV2", "Parse JSON v2"},
		{"utf8_check", "UTF8Check", "utf8Check", "UTF8 check"},
		{"idle", "Idle", "idle", "Idle"},         // a word that starts like one is not one
		{"status", "Status", "status", "Status"}, // nor one that ends in s
		{"invoice_paid", "InvoicePaid", "invoicePaid", "Invoice paid"},
	}
	for _, tt := range tests {
		if got := camel(tt.give); got != tt.wantCamel {
			t.Errorf("camel(%q) = %q, want %q", tt.give, got, tt.wantCamel)
		}
		if got := lowerCamel(tt.give); got != tt.wantLower {
			t.Errorf("lowerCamel(%q) = %q, want %q", tt.give, got, tt.wantLower)
		}
		if got := human(tt.give); got != tt.wantHuman {
			t.Errorf("human(%q) = %q, want %q", tt.give, got, tt.wantHuman)
		}
	}
}

// TestMakeJobNamesItsTypeWithInitialisms: make:job push_to_crm writes the
// type PushToCRM, its handler pushToCRMHandler and its test, and keeps
// the job's name in snake case.
func TestMakeJobNamesItsTypeWithInitialisms(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "crm")
	if _, err := New(dir, App{Module: "example.com/crm"}); err != nil {
		t.Fatal(err)
	}
	changes, err := MakeJob(dir, "contacts", "push_to_crm")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, c := range changes {
		files[c.Path] = string(c.Content)
	}
	for file, wants := range map[string][]string{
		"contacts/push_to_crm.go": {"type PushToCRM struct {", `func (PushToCRM) JobName() string { return "contacts.push_to_crm" }`,
			"type pushToCRMHandler struct{}", "func newPushToCRMHandler() queue.Handler[PushToCRM] { return pushToCRMHandler{} }"},
		"contacts/push_to_crm_test.go": {"func TestPushToCRMRuns(t *testing.T) {", "q.Dispatch(ctx, contacts.PushToCRM{})"},
		"contacts/module.go":           {"queue.Register[PushToCRM](newPushToCRMHandler),"},
	} {
		for _, want := range wants {
			if !strings.Contains(files[file], want) {
				t.Errorf("%s has no %q:\n%s", file, want, files[file])
			}
		}
	}
}
