package schedule

// PruneBatch is pruneBatch, for the tests of package schedule_test.
const PruneBatch = pruneBatch
