package config_test

import (
	"fmt"

	"github.com/navree/navree/config"
)

func ExampleNew() {
	type CRMConfig struct {
		ExportBucket string `koanf:"export_bucket" validate:"required"`
		PageSize     int    `koanf:"page_size" validate:"min=1,max=500"`
	}
	defaults := CRMConfig{ExportBucket: "exports", PageSize: 50}

	c, err := config.New(config.Sources{Environ: []string{"APP_CRM__PAGE_SIZE=100"}},
		config.Definition{Name: "crm", Defaults: defaults})
	if err != nil {
		panic(err)
	}
	crm, _ := config.Get[CRMConfig](c, "crm")
	fmt.Println(crm.ExportBucket, crm.PageSize, c.Source("crm.page_size"))

	_, err = config.New(config.Sources{Environ: []string{"APP_CRM__PAGE_SIZE=0"}},
		config.Definition{Name: "crm", Defaults: defaults})
	fmt.Println(err)
	// Output:
	// exports 100 env APP_CRM__PAGE_SIZE
	// config: invalid value for crm.page_size: "0" (from env APP_CRM__PAGE_SIZE); allowed: at least 1, at most 500
}
