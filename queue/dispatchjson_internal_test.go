package queue

import (
	"reflect"
	"testing"
	"time"
)

type exampleBase struct {
	Tenant string `json:"tenant"`
}

type exampleRow struct {
	ID    string  `json:"id"`
	Total float64 `json:"total"`
}

type exampleJob struct {
	exampleBase
	CompanyID string            `json:"company_id"`
	Rows      []exampleRow      `json:"rows,omitempty"`
	Labels    map[string]string `json:"labels"`
	Since     *time.Time        `json:"since"`
	Range     exampleRow        `json:"range"`
	Format    string
	Cancel    func()      `json:"-"`
	secret    string      // not JSON's
	Self      *exampleJob `json:"self,omitempty"`
}

type exampleEmbedsNothing struct {
	exampleEmpty
	hidden int // not JSON's
	Skip   int `json:"-"`
}

type exampleEmpty struct{}

func TestPayloadExample(t *testing.T) {
	tests := []struct {
		give any
		want string
	}{
		{exampleJob{}, `{"tenant": "", "company_id": "", "rows": [], "labels": {}, "since": null, "range": {"id":"","total":0}, "Format": "", "self": null}`},
		{exampleEmpty{}, `{}`},
		{exampleEmbedsNothing{}, `{}`},
	}
	for _, tt := range tests {
		if got := payloadExample(reflect.TypeOf(tt.give)); got != tt.want {
			t.Errorf("payloadExample(%T) = %s\nwant %s", tt.give, got, tt.want)
		}
	}
}
