package db

import "context"

// XactStatus is xactStatus, for the tests of package db_test.
func (d *DB) XactStatus(ctx context.Context, t Tracking) (string, error) { return d.xactStatus(ctx, t) }
