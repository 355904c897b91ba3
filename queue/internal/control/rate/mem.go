package rate

import (
	"cmp"
	"slices"

	"github.com/navree/navree/queue/internal/driver"
)

// Memory is the rate limits' part of the memory driver: the windows, by
// key, and the rate each was last taken at. The driver holds its lock
// around every call.
type Memory struct {
	windows map[string]*Window
	rates   map[string]driver.Rate
}

// Window returns key's window, adding it on first use.
func (m *Memory) Window(key string) *Window {
	if m.windows == nil {
		m.windows, m.rates = map[string]*Window{}, map[string]driver.Rate{}
	}
	w := m.windows[key]
	if w == nil {
		w = &Window{}
		m.windows[key] = w
	}
	return w
}

// Take takes room for n in key's window at at under r and returns how
// many it took.
func (m *Memory) Take(key string, r driver.Rate, at int64, n int) int {
	n = m.Window(key).Take(at, r, n)
	if n > 0 {
		m.rates[key] = r
	}
	return n
}

// Meter is driver.Driver's Meter: it takes one start of key's window at
// at, or says how long until the window reopens.
func (m *Memory) Meter(key string, r driver.Rate, at int64) int64 {
	if m.Take(key, r, at, 1) == 1 {
		return 0
	}
	return m.Window(key).Reopens(at, r) - at
}

// Throttles are the windows full at at of the keys of, by when they
// reopen.
func (m *Memory) Throttles(at int64, of func(key string) bool) []driver.Throttle {
	var out []driver.Throttle
	for key, w := range m.windows {
		r := m.rates[key]
		if reopens := w.Reopens(at, r); reopens > at && of(key) {
			out = append(out, driver.Throttle{Key: key, Rate: r, Reopens: reopens})
		}
	}
	slices.SortFunc(out, func(a, b driver.Throttle) int {
		return cmp.Or(cmp.Compare(a.Reopens, b.Reopens), cmp.Compare(a.Key, b.Key))
	})
	return out
}

// Prune forgets the windows empty at at.
func (m *Memory) Prune(at int64) {
	for key, w := range m.windows {
		if w.Empties(m.rates[key]) <= at {
			delete(m.windows, key)
			delete(m.rates, key)
		}
	}
}
