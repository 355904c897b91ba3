package mail

import "testing"

func TestTheDefaultPortFollowsTLS(t *testing.T) {
	for _, tt := range []struct {
		tls  string
		port int
		want string
	}{
		{STARTTLS, 0, "smtp mail.example.com:587"},
		{NoTLS, 0, "smtp mail.example.com:587"},
		{TLS, 0, "smtp mail.example.com:465"},
		{TLS, 2465, "smtp mail.example.com:2465"},
	} {
		if got := newSMTP(Config{Host: "mail.example.com", TLS: tt.tls, Port: tt.port}, nil).String(); got != tt.want {
			t.Errorf("tls %s, port %d: %s, want %s", tt.tls, tt.port, got, tt.want)
		}
	}
}
