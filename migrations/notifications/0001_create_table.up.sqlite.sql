-- What the database channel stored: one row a notification and notifiable,
-- for its inbox. Times are Unix milliseconds.
CREATE TABLE notifications (
    id              TEXT PRIMARY KEY,          -- UUID v7, shared by the notification's channels
    type            TEXT NOT NULL,             -- the notification's type, such as invoice.paid
    notifiable_type TEXT NOT NULL,             -- such as user
    notifiable_id   TEXT NOT NULL,
    data            TEXT NOT NULL,             -- JSON: what ToDatabase returned
    read_at         INTEGER,                   -- NULL while unread
    created_at      INTEGER NOT NULL
);

-- A notifiable's inbox, newest first (a UUID v7 sorts by creation).
CREATE INDEX notifications_notifiable ON notifications (notifiable_type, notifiable_id, id DESC);
-- Its unread notifications: the count of a badge, the unread page.
CREATE INDEX notifications_unread ON notifications (notifiable_type, notifiable_id, id DESC) WHERE read_at IS NULL;
