package backoff

import (
	"testing"
	"time"
)

func TestDelay(t *testing.T) {
	tests := []struct {
		name     string
		give     Backoff
		failures int
		want     time.Duration
	}{
		{"first failure", Exponential(time.Second, 300*time.Second), 1, time.Second},
		{"no failure counts as the first", Exponential(time.Second, 300*time.Second), 0, time.Second},
		{"second doubles", Exponential(time.Second, 300*time.Second), 2, 2 * time.Second},
		{"third doubles again", Exponential(time.Second, 300*time.Second), 3, 4 * time.Second},
		{"last below max", Exponential(time.Second, 300*time.Second), 9, 256 * time.Second},
		{"doubling past max stops at max", Exponential(time.Second, 300*time.Second), 10, 300 * time.Second},
		{"far past max, no overflow", Exponential(time.Second, 300*time.Second), 1000, 300 * time.Second},
		{"base above max: the first waits base", Exponential(10*time.Second, 5*time.Second), 1, 10 * time.Second},
		{"base above max: later ones max", Exponential(10*time.Second, 5*time.Second), 2, 5 * time.Second},
		{"fixed, first", Fixed(30 * time.Second), 1, 30 * time.Second},
		{"fixed, later", Fixed(30 * time.Second), 100, 30 * time.Second},
		{"zero", Fixed(0), 3, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.give.Delay(tt.failures); got != tt.want {
				t.Errorf("%s.Delay(%d) = %s, want %s", tt.give, tt.failures, got, tt.want)
			}
		})
	}
}

func TestStoredForm(t *testing.T) {
	tests := []struct {
		give Backoff
		want string
	}{
		{Exponential(time.Second, 300*time.Second), "exponential:1000:300000"},
		{Fixed(30 * time.Second), "fixed:30000"},
		{Fixed(1500 * time.Microsecond), "fixed:1"},
	}
	for _, tt := range tests {
		if got := tt.give.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
		if back, err := Parse(tt.want); err != nil || back.String() != tt.want {
			t.Errorf("Parse(%q) = %v, %v", tt.want, back, err)
		}
	}
	for _, bad := range []string{"", "sometimes", "fixed", "fixed:-1", "fixed:1:2", "exponential:1", "exponential:a:2", "linear:1"} {
		if _, err := Parse(bad); err == nil || err.Error() != "not exponential:BASE_MS:MAX_MS or fixed:MS" {
			t.Errorf("Parse(%q): %v", bad, err)
		}
	}
}
