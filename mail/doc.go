// Package mail sends email, at once or queued as a job on the app's
// queue.
//
// # Sending
//
// [Module] provides the app's [*Mailer], configured by the [mail] section
// ([Config]). [Mailer.Send] sends a [Message] now; [Mailer.Queue] renders
// it now and queues a mail.send job that sends it from a worker, joining
// the caller's unit of work like any dispatch. A server that refuses a
// message for now (a 4xx reply) has it retried; one that refuses it for
// good (a 5xx reply) fails the job at once, with the server's reply, in
// the failed jobs, where queue:retry sends it again.
//
//	msg := mail.Template(job.RequestedBy, "Your export is ready", "mail/export-ready").
//		With(map[string]any{"URL": url})
//	if _, err := h.mailer.Queue(ctx, msg); err != nil {
//		return err
//	}
//
// # Templates
//
// [Template] makes a message whose bodies are rendered from the files
// NAME.html.tmpl (html/template) and NAME.txt.tmpl (text/template) of the
// file systems given to [Templates], with an optional layout per folder.
// Templates are parsed when the Mailer is built, so a broken one fails the
// boot naming its file.
//
// # Transports
//
// "smtp" sends through an SMTP server, connecting afresh for each
// message; "log" logs one line per message and sends nothing (the
// default; in development the line holds the recipients and the text
// body too); "memory" keeps messages for tests. A failover list names
// transports to try when one cannot send. Each transport is handed the
// same bytes, rendered once.
//
// # Previews and commands
//
// [Previews] registers sample mail: mail:preview NAME prints one, serve
// shows them under /mail/previews in development. mail:test ADDRESS sends
// a test message. Package mailtest has a real SMTP server for tests and
// assertions over the memory transport.
package mail
