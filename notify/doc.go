// Package notify sends notifications: one notification, to many
// notifiables, over many channels (mail, database, log, or an app's own),
// each delivery a job of its own.
package notify
