package app

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCallerRecordsThePackage: a registration records the caller's
// package import path, not only its file, and the line it was made on.
func TestCallerRecordsThePackage(t *testing.T) {
	s := func() Site { return Caller(1) }() // the line of this call
	if s.Package != "github.com/navree/navree/app" || filepath.Base(s.File) != "site_test.go" || s.Line != 12 {
		t.Errorf("Caller(1) = %+v, want this package, file and line 12", s)
	}
	for name, want := range map[string]string{
		"github.com/acme/crm/billing.init.func1":  "github.com/acme/crm/billing",
		"github.com/acme/crm/billing.glob..func2": "github.com/acme/crm/billing",
		"main.main": "main",
		"github.com/acme/crm/billing.register[...]":         "github.com/acme/crm/billing",
		"github.com/acme/go.crm/billing.(*Module).listen.2": "github.com/acme/go.crm/billing",
	} {
		if got := packageOf(name); got != want {
			t.Errorf("packageOf(%s) = %s, want %s", name, got, want)
		}
	}
}

// TestSiteShowsNoMachinesPaths: a site inside the working directory is
// shown relative to it, one outside by its folder and file alone.
func TestSiteShowsNoMachinesPaths(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		site Site
		want string
	}{
		{Site{File: filepath.Join(wd, "contacts", "module.go"), Line: 14}, "contacts/module.go:14"},
		{Site{File: "/home/ada/crm/contacts/module.go", Line: 14}, "…/contacts/module.go:14"},
		{Site{File: "github.com/acme/crm/contacts/module.go", Line: 14}, "…/contacts/module.go:14"},
		{Site{File: "unknown place"}, "unknown place"},
	} {
		if got := tt.site.String(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.site, got, tt.want)
		}
	}
}
