// Package recording fences the bus's recording mode: an events.Recorder
// must embed [Mark], and only the events packages (events/eventstest) can
// import this one.
package recording

// Mark, embedded in a type, makes it one that may record a bus's events.
type Mark struct{}

func (Mark) recording() {}

// Marked is a type that embeds [Mark].
type Marked interface{ recording() }
