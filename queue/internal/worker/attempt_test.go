package worker

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestStorable(t *testing.T) {
	long := strings.Repeat("é", MaxErrorLen) // two bytes a rune
	tests := []struct {
		name, give, want string
	}{
		{"plain", "smtp refused the message", "smtp refused the message"},
		{"NUL", "a\x00b", "a\uFFFDb"},
		{"invalid UTF-8", "a\xff\xfeb", "a\uFFFDb"},
		{"cut on a rune, with an ellipsis", long, long[:MaxErrorLen-len("…")-1] + "…"},
		{"at the bound, whole", strings.Repeat("x", MaxErrorLen), strings.Repeat("x", MaxErrorLen)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := storable(tt.give)
			if got != tt.want || len(got) > MaxErrorLen || !utf8.ValidString(got) || strings.ContainsRune(got, 0) {
				t.Errorf("storable: %d bytes %q…, want %d bytes", len(got), got[:min(len(got), 20)], len(tt.want))
			}
		})
	}
}

func TestPermanent(t *testing.T) {
	cause := errors.New("550 mailbox unavailable")
	err := fmt.Errorf("send: %w", Permanent(cause))
	if !IsPermanent(err) || !errors.Is(err, cause) || err.Error() != "send: 550 mailbox unavailable" {
		t.Fatalf("%v: permanent %v, is the cause %v", err, IsPermanent(err), errors.Is(err, cause))
	}
	if IsPermanent(cause) || Permanent(nil) != nil {
		t.Fatal("a plain error is permanent, or Permanent(nil) is not nil")
	}
}
