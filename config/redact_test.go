package config_test

import (
	"testing"

	"github.com/navree/navree/config"
)

func TestRedact(t *testing.T) {
	tests := []struct {
		name string
		give string
		want string
	}{
		{"userinfo", "postgres://app:hunter2@db:5432/crm", "postgres://app:xxxxx@db:5432/crm"},
		{"other scheme", "mysql://root:hunter2@db/crm", "mysql://root:xxxxx@db/crm"},
		{"query password", "postgres://bob@db/x?password=S3cret", "postgres://bob@db/x?password=xxxxx"},
		{"query sslpassword", "postgres://bob@db/x?sslmode=require&sslpassword=S3cret&application_name=crm",
			"postgres://bob@db/x?sslmode=require&sslpassword=xxxxx&application_name=crm"},
		{"upper case key", "postgresql://bob@db/x?PASSWORD=S3cret", "postgresql://bob@db/x?PASSWORD=xxxxx"},
		{"mixed case key", "postgres://bob@db/x?SslPassword=S3cret", "postgres://bob@db/x?SslPassword=xxxxx"},
		{"encoded key", "postgres://bob@db/x?pass%77ord=S3cret", "postgres://bob@db/x?pass%77ord=xxxxx"},
		{"both", "postgres://bob:S3cret@db/x?password=S3cret", "postgres://bob:xxxxx@db/x?password=xxxxx"},
		{"special characters raw", "postgres://bob:p@ss:w/rd?#%@db/x", "postgres://bob:xxxxx@db/x"},
		{"special characters encoded", "postgres://bob:p%40ss%3Aw%2Frd%3F%23%25@db/x", "postgres://bob:xxxxx@db/x"},
		{"special characters raw in the query", "postgres://bob@db/x?password=p@ss:w/rd?#%&sslmode=disable",
			"postgres://bob@db/x?password=xxxxx&sslmode=disable"},
		{"special characters encoded in the query", "postgres://bob@db/x?password=p%40ss%3Aw%2Frd%3F%23%25",
			"postgres://bob@db/x?password=xxxxx"},
		{"a stray & belongs to the password", "postgres://bob@db/x?password=a&b&sslmode=disable",
			"postgres://bob@db/x?password=xxxxx&sslmode=disable"},
		// An @ in the query after a port: from the port to the end is masked.
		{"ambiguous", "postgres://bob@db:5432/x?password=p@ss", "postgres://bob@db:xxxxx"},
		{"key=value", "host=db user=bob password=S3cret dbname=crm", "host=db user=bob password=xxxxx dbname=crm"},
		{"key=value quoted", `host=db password='a b\'c' user=bob`, "host=db password=xxxxx user=bob"},
		{"key=value unterminated quote", `host=db password='a b`, "host=db password=xxxxx"},
		{"key=value text after the closing quote", `host=db password='a b'c user=bob`, "host=db password=xxxxx user=bob"},
		{"key=value escaped space", `host=db password=a\ b user=bob`, "host=db password=xxxxx user=bob"},
		{"key=value spaces around =", "host=db password = S3cret user=bob", "host=db password = xxxxx user=bob"},
		{"key=value upper case", "host=db PASSWORD=S3cret", "host=db PASSWORD=xxxxx"},
		{"key=value sslpassword", "host=db sslpassword=S3cret sslkey=/k", "host=db sslpassword=xxxxx sslkey=/k"},
		{"key=value special characters", "host=db password=p@ss:w/rd?#% user=bob", "host=db password=xxxxx user=bob"},
		{"no scheme", "bob:S3cret@db", "bob:xxxxx@db"},
		{"a token parameter", "https://api.example.com/v1?api_token=S3cret", "https://api.example.com/v1?api_token=xxxxx"},
		{"no password", "postgres://bob@db:5432/crm?sslmode=disable", "postgres://bob@db:5432/crm?sslmode=disable"},
		{"empty password", "postgres://bob:@db/crm?password=", "postgres://bob:@db/crm?password="},
		{"ipv6", "postgres://[::1]:5432/crm", "postgres://[::1]:5432/crm"},
		{"sqlite", "sqlite://var/app.db", "sqlite://var/app.db"},
		{"not a URL", "8", "8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := config.Redact(tt.give); got != tt.want {
				t.Errorf("Redact(%q)\n got %q\nwant %q", tt.give, got, tt.want)
			}
		})
	}
}
