// Package recording fences the queue's recording mode: a queue.Recorder
// must embed [Mark], and only the queue's own packages (queue/queuetest)
// can import this one.
package recording

// Mark, embedded in a type, makes it one that may record a queue's
// dispatches.
type Mark struct{}

func (Mark) recording() {}

// Marked is a type that embeds [Mark].
type Marked interface{ recording() }
