package driver

import (
	"encoding/json"
	"strconv"
)

// Controls are the settings of a job's features that no index needs: a
// concurrency limit's size, a rate limit's. They are stored as one JSON
// object, the column controls of jobs, queue_held, failed_jobs and
// queue_steps, which every move between those tables carries, so that a
// feature's setting is a key of this record, never a column of four
// tables. A job without such settings stores NULL.
type Controls struct {
	LimitMax int   `json:"limit_max,omitempty"`
	RateMax  int   `json:"rate_max,omitempty"`
	RatePer  int64 `json:"rate_per,omitempty"`
}

// ControlsOf are the controls of a job with these settings.
func ControlsOf(limitMax int, r Rate) Controls {
	return Controls{LimitMax: limitMax, RateMax: r.Max, RatePer: r.PerMs}
}

// Stored is the record as a statement binds it: nil (NULL) when it holds
// nothing, else the JSON object of the settings that are set.
func (c Controls) Stored() any {
	if c == (Controls{}) {
		return nil
	}
	b := make([]byte, 0, 64)
	b = append(b, '{')
	field := func(name string, v int64) {
		if v == 0 {
			return
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, '"', ':')
		b = strconv.AppendInt(b, v, 10)
	}
	field("limit_max", int64(c.LimitMax))
	field("rate_max", int64(c.RateMax))
	field("rate_per", c.RatePer)
	return string(append(b, '}'))
}

// ReadControls reads a stored record: "" (NULL) is none. A key it does
// not know (a later build's feature) is passed over, and a key written
// as null (by the migration that brought the record in) reads as unset.
func ReadControls(stored string) (Controls, error) {
	var c Controls
	if stored == "" {
		return c, nil
	}
	err := json.Unmarshal([]byte(stored), &c)
	return c, err
}

// Rate is the rate limit of the record.
func (c Controls) Rate() Rate { return Rate{Max: c.RateMax, PerMs: c.RatePer} }
