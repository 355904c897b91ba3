package config

import (
	"fmt"
	"log/slog"
)

// Secret is a configuration value that must never be shown, such as
// [mail] password. It prints, formats, marshals and logs as xxxxx (empty
// when it is empty), so a section printed with %+v or logged whole keeps
// it hidden; [Secret.Reveal] returns the value for the code that uses it.
type Secret string

// Reveal returns the secret's value.
func (s Secret) Reveal() string { return string(s) }

// String returns xxxxx, or "" for an empty secret.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return masked
}

// Format writes [Secret.String] whatever the verb: %v, %s, %q, %x, %#v.
func (s Secret) Format(f fmt.State, verb rune) {
	if verb == 'q' {
		fmt.Fprintf(f, "%q", s.String())
		return
	}
	fmt.Fprint(f, s.String())
}

// MarshalText returns xxxxx, so JSON, TOML and the like never hold the
// value.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// LogValue returns xxxxx, for log/slog.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }
