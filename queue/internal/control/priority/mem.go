package priority

import (
	"cmp"
	"slices"
)

// Levels is priority's part of the memory driver's waiting jobs of a
// queue: a W (the driver's own list of waiting jobs in due order) for
// each priority other than 0, highest first. Those of priority 0 are the
// driver's own, and come between the positive and the negative ones.
type Levels[W any] struct {
	levels []level[W]
}

// level holds the waiting jobs of one priority other than 0.
type level[W any] struct {
	priority int
	waiting  W
}

// Of returns the waiting jobs of priority p, other than 0, adding its
// level on first use.
func (l *Levels[W]) Of(p int) *W {
	i, found := slices.BinarySearchFunc(l.levels, p, func(v level[W], p int) int { return cmp.Compare(p, v.priority) })
	if !found {
		l.levels = slices.Insert(l.levels, i, level[W]{priority: p})
	}
	return &l.levels[i].waiting
}

// InOrder calls take with the waiting jobs of each priority, highest
// first, zero's (those of priority 0) between the positive and the
// negative ones, until take reports false.
func (l *Levels[W]) InOrder(zero *W, take func(w *W) bool) {
	i := 0
	for ; i < len(l.levels) && l.levels[i].priority > 0; i++ {
		if !take(&l.levels[i].waiting) {
			return
		}
	}
	if !take(zero) {
		return
	}
	for ; i < len(l.levels); i++ {
		if !take(&l.levels[i].waiting) {
			return
		}
	}
}

// Each calls f with the waiting jobs of each priority other than 0.
func (l *Levels[W]) Each(f func(w *W)) {
	for i := range l.levels {
		f(&l.levels[i].waiting)
	}
}

// Any reports whether f reports true of the waiting jobs of a priority
// other than 0.
func (l *Levels[W]) Any(f func(w *W) bool) bool {
	for i := range l.levels {
		if f(&l.levels[i].waiting) {
			return true
		}
	}
	return false
}
