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

func ExampleRedact() {
	fmt.Println(config.Redact("postgres://crm:S3cret@db:5432/crm"))
	fmt.Println(config.Redact("postgres://crm@db:5432/crm?sslmode=require&password=S3cret"))
	fmt.Println(config.Redact("host=db user=crm password='S3 cret' dbname=crm"))
	// Output:
	// postgres://crm:xxxxx@db:5432/crm
	// postgres://crm@db:5432/crm?sslmode=require&password=xxxxx
	// host=db user=crm password=xxxxx dbname=crm
}
