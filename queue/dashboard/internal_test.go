package dashboard

import (
	"testing"
	"time"

	"github.com/navree/navree/queue"
)

func TestMaskJSON(t *testing.T) {
	keys := map[string]bool{"password": true, "token": true}
	tests := []struct {
		name string
		give string
		want string
	}{
		{"a scalar", `42`, `42`},
		{"an empty object", `{}`, `{}`},
		{"keys in their order", `{"b":1,"a":"x"}`, "{\n  \"b\": 1,\n  \"a\": \"x\"\n}"},
		{"a masked key", `{"user":"ada","password":"hunter2"}`, "{\n  \"user\": \"ada\",\n  \"password\": \"[masked]\"\n}"},
		{"any letter case", `{"Password":"p","TOKEN":{"a":1}}`, "{\n  \"Password\": \"[masked]\",\n  \"TOKEN\": \"[masked]\"\n}"},
		{"at any depth, in arrays", `{"a":[{"token":"t"},[]],"n":null}`,
			"{\n  \"a\": [\n    {\n      \"token\": \"[masked]\"\n    },\n    []\n  ],\n  \"n\": null\n}"},
		{"a masked key's value is any value", `{"password":[1,{"x":2}],"ok":true}`, "{\n  \"password\": \"[masked]\",\n  \"ok\": true\n}"},
		{"numbers as written", `{"n":12345678901234567890,"f":1.50}`, "{\n  \"n\": 12345678901234567890,\n  \"f\": 1.50\n}"},
		{"strings as JSON, markup left to the page", `{"s":"<b>\"q\"\u00e9\n"}`, "{\n  \"s\": \"<b>\\\"q\\\"é\\n\"\n}"},
		{"a value, not a key, named password", `["password"]`, "[\n  \"password\"\n]"},
	}
	for _, tt := range tests {
		got, err := maskJSON([]byte(tt.give), keys)
		if err != nil || got != tt.want {
			t.Errorf("%s: maskJSON(%s) =\n%s, %v\nwant\n%s", tt.name, tt.give, got, err, tt.want)
		}
	}
	for _, bad := range []string{``, `{`, `{"a":}`, `{} {}`, `[1,]`} {
		if got, err := maskJSON([]byte(bad), keys); err == nil {
			t.Errorf("maskJSON(%q) = %q, want an error", bad, got)
		}
	}
}

func TestCountShowsTheLimit(t *testing.T) {
	tests := []struct {
		give int
		want string
	}{{0, "0"}, {7, "7"}, {queue.CountLimit, "100000"}, {queue.CountLimit + 1, "100000+"}}
	for _, tt := range tests {
		if got := count(tt.give); got != tt.want {
			t.Errorf("count(%d) = %q, want %q", tt.give, got, tt.want)
		}
	}
}

func TestBackoffAndTimeoutInWords(t *testing.T) {
	backoffs := []struct{ give, want string }{
		{"exponential:1000:300000", "exponential, 1s doubling up to 5m"},
		{"exponential:500:90000", "exponential, 500ms doubling up to 1m30s"},
		{"fixed:30000", "fixed 30s"},
		{"fixed:7200000", "fixed 2h"},
		{"fixed:0", "fixed 0s"},
		{"exponential:1500:3600000", "exponential, 1.5s doubling up to 1h"},
		{"fixed:soon", `"fixed:soon" (not a backoff the queue can read: a failed attempt fails the job for good)`},
		{"", `"" (not a backoff the queue can read: a failed attempt fails the job for good)`},
		{"fixed:1:2", `"fixed:1:2" (not a backoff the queue can read: a failed attempt fails the job for good)`},
	}
	for _, tt := range backoffs {
		if got := backoffText(tt.give); got != tt.want {
			t.Errorf("backoffText(%q) = %q, want %q", tt.give, got, tt.want)
		}
	}
	timeouts := []struct {
		give time.Duration
		want string
	}{{0, "no limit"}, {queue.DefaultTimeout, "1m"}, {150 * time.Second, "2m30s"}, {90 * time.Minute, "1h30m"}, {1500 * time.Millisecond, "1.5s"}}
	for _, tt := range timeouts {
		if got := timeoutText(tt.give); got != tt.want {
			t.Errorf("timeoutText(%v) = %q, want %q", tt.give, got, tt.want)
		}
	}
}

func TestPerMinute(t *testing.T) {
	tests := []struct {
		give float64
		want string
	}{{0, "0/min"}, {0.04, "0/min"}, {0.5, "0.5/min"}, {3.56, "3.6/min"}, {9.94, "9.9/min"}, {12.4, "12/min"}, {250.5, "251/min"}}
	for _, tt := range tests {
		if got := perMinute(tt.give); got != tt.want {
			t.Errorf("perMinute(%v) = %q, want %q", tt.give, got, tt.want)
		}
	}
}

func TestConfigValidatesThePrefix(t *testing.T) {
	for _, good := range []string{"/navree/queue", "/admin", "/a/b-c_d.e/F9"} {
		if err := (Config{Prefix: good}).Validate(); err != nil {
			t.Errorf("prefix %q: %v", good, err)
		}
	}
	for _, bad := range []string{"", "/", "admin", "/admin/", "//admin", "/a//b", "/a b", "/{id}", "/a?b", "/ä"} {
		if err := (Config{Prefix: bad}).Validate(); err == nil {
			t.Errorf("prefix %q is accepted", bad)
		}
	}
	if err := (Config{Prefix: "/a", MaskKeys: []string{"password", ""}}).Validate(); err == nil {
		t.Error("an empty mask key is accepted")
	}
	if _, err := (Config{RefreshMs: 200}).withDefaults(); err == nil {
		t.Error("refresh_ms = 200 is accepted")
	}
	cfg, err := Config{}.withDefaults()
	if err != nil || cfg.Prefix != "/navree/queue" || cfg.RefreshMs != 5000 || len(cfg.MaskKeys) != 3 {
		t.Errorf("Config{}.withDefaults() = %+v, %v", cfg, err)
	}
	if cfg, _ := (Config{MaskKeys: []string{}}).withDefaults(); len(cfg.MaskKeys) != 0 {
		t.Errorf("an empty MaskKeys took the default: %v", cfg.MaskKeys)
	}
}
