// Package notify sends notifications: one notification, to many
// notifiables, over many channels (mail, the database inbox, the log, or
// an app's own), each delivery a job of its own.
//
// # Notifications and notifiables
//
// A [Notification] has a stable type and says, per [Notifiable], which
// channels it goes over ([Notification.Via]); for each channel it has a
// method that makes what that channel delivers ([MailNotification]'s
// ToMail, [DatabaseNotification]'s ToDatabase). A Notifiable is whoever
// it is for: a user, a team, or an address alone ([Route]). Modules
// register their notification types with [Register]:
//
//	type ExportReady struct{ URL string }
//
//	func (ExportReady) NotificationType() string       { return "contacts.export_ready" }
//	func (ExportReady) Via(notify.Notifiable) []string { return []string{notify.Mail, notify.Database} }
//
//	var Module = fx.Module("contacts", notify.Register[ExportReady]())
//
// # Sending
//
// [Module] provides the app's [*Notifier]. [Notifier.Send] queues one
// notify.send job per notifiable and channel, retried alone: a mail
// server that says "not now" has the mail retried while the inbox row,
// stored by another job, is written once. The jobs join the unit of work
// in ctx: a request that fails notifies no one. [Notifier.SendNow]
// delivers in the call instead. [AddChannel] adds a channel of the
// app's own.
//
// # The inbox
//
// The database channel stores notifications in the table notifications;
// [Inbox] lists a notifiable's, marks them read and deletes them, a page
// at a time. notify:prune deletes those read long ago.
//
// # Testing
//
// Package notifytest has a fake notifier that records what was sent,
// with assertions. Without fx, [New] builds the notifier and returns the
// registration of notify.send to give the queue. The guide is
// docs/notifications.md.
package notify
