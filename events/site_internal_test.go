package events

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/navree/navree/app"
)

// TestSitesOrderAsWrittenWhereverTheCodeLies: the order of sync listeners
// depends on their package's import path, file name and line alone: the
// same for the absolute paths of two machines and for -trimpath's
// module-relative ones, where ordering by the paths put the framework's
// module cache (/root/go/pkg/mod/github.com/navree/…) after an app in
// /home and before one in /srv.
func TestSitesOrderAsWrittenWhereverTheCodeLies(t *testing.T) {
	type place struct{ pkg, file string }
	places := []place{
		{"github.com/acme/crm/billing", "billing/module.go"},
		{"github.com/acme/crm/contacts", "contacts/listeners.go"},
		{"github.com/acme/crm/contacts", "contacts/module.go"},
		{"github.com/navree/navree/notify", "notify/module.go"},
	}
	roots := map[string][2]string{ // where the app and the framework lie
		"a developer's machine": {"/home/ada/crm/", "/root/go/pkg/mod/github.com/navree/navree@v0.3.0/"},
		"a server":              {"/srv/crm/", "/root/go/pkg/mod/github.com/navree/navree@v0.3.0/"},
		"-trimpath":             {"github.com/acme/crm/", "github.com/navree/navree@v0.3.0/"},
	}
	var want []string
	for name, root := range roots {
		var sites []app.Site
		for i := len(places) - 1; i >= 0; i-- { // fx gives them in any order
			p := places[i]
			dir := root[0]
			if p.pkg == "github.com/navree/navree/notify" {
				dir = root[1]
			}
			sites = append(sites, app.Site{File: dir + p.file, Line: 30, Package: p.pkg}, app.Site{File: dir + p.file, Line: 12, Package: p.pkg})
		}
		slices.SortStableFunc(sites, compareSites)
		var got []string
		for _, s := range sites {
			got = append(got, fmt.Sprintf("%s %s %d", s.Package, filepath.Base(s.File), s.Line))
		}
		if want == nil {
			want = got
		}
		if !slices.Equal(got, want) {
			t.Errorf("on %s the listeners sort as\n%q\nelsewhere as\n%q", name, got, want)
		}
	}
	if want[0] != "github.com/acme/crm/billing module.go 12" || want[1] != "github.com/acme/crm/billing module.go 30" {
		t.Errorf("sites sort as %q: want package, then file, then line", want)
	}
}
