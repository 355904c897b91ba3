package notify

// PruneBatch is pruneBatch, for the tests of package notify_test.
const PruneBatch = pruneBatch
