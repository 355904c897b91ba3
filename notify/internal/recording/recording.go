// Package recording fences the notifier's recording mode: a
// notify.Recorder must embed [Mark], and only the notify packages
// (notify/notifytest) can import this one.
package recording

// Mark, embedded in a type, makes it one that may record a notifier's
// notifications.
type Mark struct{}

func (Mark) recording() {}

// Marked is a type that embeds [Mark].
type Marked interface{ recording() }
