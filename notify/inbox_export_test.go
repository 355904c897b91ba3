package notify

// InsertStored lets the inbox's tests (package notify_test) store
// notifications as the database channel does.
var InsertStored = insertStored
