package fair

import "github.com/navree/navree/queue/internal/driver"

// Memory is fairness's part of the memory driver: each group's next
// place, by queue and key, and each queue's highest next place given (as
// the table queue_fair holds them). The driver holds its lock around
// every call.
type Memory struct {
	next map[[2]string]int64
	max  map[string]int64
}

// Place gives j, entering the driver's jobs with a FairKey, its place in
// its queue's rounds, as Place does in SQL: its group's next, or the
// round the queue serves (first's place, its first job with a key
// waiting; with none, the next after the last given), whichever is
// later.
func (m *Memory) Place(j, first *driver.Job) {
	if m.next == nil {
		m.next, m.max = map[[2]string]int64{}, map[string]int64{}
	}
	round := int64(1)
	if first != nil {
		round = first.FairSeq
	} else if most, ok := m.max[j.Queue]; ok {
		round = most
	}
	k := [2]string{j.Queue, j.FairKey}
	seq := round
	if next, ok := m.next[k]; ok {
		seq = max(next, round)
	}
	m.next[k] = seq + 1
	m.max[j.Queue] = max(m.max[j.Queue], seq+1)
	j.FairSeq = seq
}

// Prune forgets the next places of the groups behind their queue's
// round (first gives a queue's first job with a key waiting, or nil), as
// Prune does in SQL: their next place is the round's, forgotten or not.
func (m *Memory) Prune(first func(queue string) *driver.Job) {
	for k, next := range m.next {
		round := m.max[k[0]] - 1
		if f := first(k[0]); f != nil {
			round = f.FairSeq
		}
		if next <= round {
			delete(m.next, k)
		}
	}
}

// A Line is a list of waiting jobs as the memory driver keeps one: Head
// is its first (nil for none), Pop takes that one out.
type Line interface {
	Head() *driver.Job
	Pop() *driver.Job
}

// Take takes up to want of the due jobs of priority 0, in Order, out of
// two of the memory driver's lines: plain, the jobs without a FairKey in
// due order, and keyed, those with one by place. It takes those without
// a key first, as the search in SQL does; the keyed jobs it passed over,
// due later, go back through wait.
func Take[L Line](plain, keyed L, now int64, want int, wait func(*driver.Job)) []*driver.Job {
	var found, later []*driver.Job
	for len(found) < want {
		j := plain.Head()
		if j == nil || j.AvailableAt > now {
			break
		}
		found = append(found, plain.Pop())
	}
	for keyed.Head() != nil && len(found) < want {
		j := keyed.Pop()
		if j.AvailableAt > now {
			later = append(later, j)
			continue
		}
		found = append(found, j)
	}
	Order(found)
	for _, j := range later {
		wait(j)
	}
	return found
}
