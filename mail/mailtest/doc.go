// Package mailtest tests mail: a real SMTP server to send to, a parser of
// what arrived, and assertions over the mailer's memory transport and the
// queue fake.
//
// With [mail] transport = "memory", what the app sends stays in the
// process and the assertions read it:
//
//	a := apptest.New(t, db.Module(), queue.Module(), mail.Module(), crm.Module,
//		apptest.TempDatabase(), apptest.Config(map[string]any{"mail": map[string]any{"transport": "memory"}}),
//		fx.Populate(&mailer, &q))
//	// ... queue an export, then q.RunPending(ctx) ...
//	mailtest.AssertSent(t, mailer, func(m mailtest.Message) bool {
//		return m.Subject == "Your export is ready" && strings.Contains(m.Text, "/exports/")
//	})
//
// [NewServer] starts an SMTP server on 127.0.0.1 for the test, optionally
// with STARTTLS and a login, that records what it receives and refuses
// messages with a chosen reply ([Server.Refuse]): the way to test the
// smtp transport, retries of a 451 and failed jobs of a 550.
package mailtest
