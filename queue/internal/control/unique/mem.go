package unique

import "github.com/navree/navree/queue/internal/driver"

// Memory is uniqueness's part of the memory driver: the id of the
// pending job holding each unique key, in its jobs or held by its limit.
// The driver holds its lock around every call.
type Memory map[string]string

// Holder returns the id of the pending job holding key at now (job finds
// it by id), letting a job whose window has passed give the key up.
func (m Memory) Holder(key string, now int64, job func(id string) *driver.Job) (string, bool) {
	id, ok := m[key]
	if !ok {
		return "", false
	}
	if j := job(id); j.UniqueUntil != 0 && j.UniqueUntil <= now {
		delete(m, key)
		j.UniqueKey = ""
		return "", false
	}
	return id, true
}

// Take has j hold its key, if it has one.
func (m Memory) Take(j *driver.Job) {
	if j.UniqueKey != "" {
		m[j.UniqueKey] = j.ID
	}
}

// Release has j give its key up, if it holds it.
func (m Memory) Release(j *driver.Job) {
	if j.UniqueKey != "" && m[j.UniqueKey] == j.ID {
		delete(m, j.UniqueKey)
	}
}

// GiveUp has the job h, which holds its key and runs, give it up to a
// debounced dispatch.
func (m Memory) GiveUp(h *driver.Job) {
	delete(m, h.UniqueKey)
	h.UniqueKey = ""
}
