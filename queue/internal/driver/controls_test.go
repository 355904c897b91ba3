package driver_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/navree/navree/queue/internal/driver"
)

// TestAControlsRecordReadsBackAsWritten: a record stores the settings that
// are set, as a JSON object that encoding/json reads the same; none
// stores NULL; what the migration writes (keys of null, spaces) and a
// later build's keys read too.
func TestAControlsRecordReadsBackAsWritten(t *testing.T) {
	for _, c := range []driver.Controls{{}, {LimitMax: 1}, {RateMax: 5, RatePer: 60000}, {LimitMax: 2, RateMax: 1, RatePer: 1 << 40}} {
		stored := c.Stored()
		if c == (driver.Controls{}) {
			if stored != nil {
				t.Errorf("%+v stores %v; want NULL", c, stored)
			}
			continue
		}
		var std driver.Controls
		if err := json.Unmarshal([]byte(stored.(string)), &std); err != nil || std != c {
			t.Errorf("%+v stores %s, which encoding/json reads as %+v, %v", c, stored, std, err)
		}
		if got, err := driver.ReadControls(stored.(string)); err != nil || got != c {
			t.Errorf("%+v stores %s, read back as %+v, %v", c, stored, got, err)
		}
	}
	for stored, want := range map[string]driver.Controls{
		``: {},
		`{"limit_max" : 2, "rate_max" : null, "rate_per" : null}`: {LimitMax: 2},
		`{"rate_max":5,"rate_per":1000,"expires_in":30}`:          {RateMax: 5, RatePer: 1000},
	} {
		if got, err := driver.ReadControls(stored); err != nil || got != want {
			t.Errorf("ReadControls(%s) = %+v, %v; want %+v", stored, got, err, want)
		}
	}
	for _, stored := range []string{`five a minute`, `{"limit_max":"2"}`, `[1]`} {
		if got, err := driver.ReadControls(stored); err == nil {
			t.Errorf("ReadControls(%s) = %+v; want an error", stored, got)
		}
	}
	if got := fmt.Sprint(driver.ControlsOf(3, driver.Rate{Max: 4, PerMs: 500}).Stored()); got != `{"limit_max":3,"rate_max":4,"rate_per":500}` {
		t.Errorf("ControlsOf(3, 4/500ms) stores %s", got)
	}
}
