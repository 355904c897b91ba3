// Package config loads the app's configuration and hands each module a
// typed, validated section of it.
//
// # Sources
//
// Values come from four sources; a later one overrides an earlier one:
//
//  1. the defaults each section declares in Go ([Section]);
//  2. config/app.toml of the app folder, if present;
//  3. config/app.$APP_ENV.toml, if APP_ENV is set;
//  4. environment variables named APP_SECTION__KEY, for example
//     APP_QUEUE__WORKERS=8. A list is one comma-separated string:
//     APP_QUEUE__QUEUES=high,default.
//
// An APP_ENV whose file is missing fails the boot with an [*Error] naming
// the file and the environments that have one: APP_ENV=prodution must not
// boot production without its settings. To run an environment on
// variables alone, create its file empty: an empty
// config/app.production.toml says that is intended.
//
// [Defaults] describes those sources for a process; tests build their own
// [Sources] (a temporary folder, a fixed environment, overrides).
//
// # The app folder
//
// The config folder is config/ in the app folder, the app's root
// ([FindRoot]): the folder APP_ROOT names, else the working directory when
// it holds config/ or go.mod, else the running binary's folder when it
// does. Relative paths of values (the SQLite default sqlite://var/app.db)
// are relative to it too ([Config.Root]), so a binary run from another
// folder reads the app's configuration and opens the app's database.
// Without an app folder the boot fails, saying to run the app from its
// folder or to set APP_ROOT.
//
// # Sections
//
// A module declares its section with [Section], giving its defaults as a
// struct whose fields carry `koanf` tags (the key) and optional `validate`
// tags:
//
//	type HTTP struct {
//		Addr string `koanf:"addr" validate:"required"`
//		ShutdownTimeoutMs int `koanf:"shutdown_timeout_ms" validate:"min=0"`
//	}
//
//	config.Section("http", HTTP{Addr: "127.0.0.1:8080", ShutdownTimeoutMs: 10000})
//
// The rules are "required", "min=N", "max=N" and "oneof=a b c". A section
// type may also have a Validate() error method for rules across fields.
//
// Every declared section is decoded and validated when the [Config] is
// built, so one bad value fails the boot with an [*Error] naming the key,
// the value given, where it came from and what is allowed. A key that no
// section declares fails the boot too, so that a typo in a deploy does not
// run on the defaults: a key its section does not have (queue.wokers: "did
// you mean workers?") and a section that no module of this binary declares
// ([databse] or APP_DATABSE__URL: "did you mean [database]?"). The
// nearest known name is suggested when it is at most two edits away (and
// one per three letters); otherwise the error lists the names there are.
//
// # Secrets
//
// An [*Error] never prints a password: the value it shows goes through
// [Redact], which masks the passwords of URLs and of key=value connection
// strings, and the value of a key whose name says it is a secret
// (mail.password, an api_token) is shown as xxxxx.
package config
