package dbdriver

import (
	"context"
	"database/sql"

	"github.com/navree/navree/queue/internal/control/fair"
	"github.com/navree/navree/queue/internal/driver"
)

// Fairness (see driver.Job.FairKey): its places, their statements and
// its part of a reservation's plan are package fair's
// (queue/internal/control/fair). Every insert path, and moveIn, gives the
// jobs with a key their places (placeAll); on PostgreSQL the trigger
// jobs_fair gives them to the jobs that enter jobs otherwise.

// prunePlaces is driver.UpkeepPlaces. It looks first, reading only.
func (b *base) prunePlaces(ctx context.Context) error {
	if found, err := b.exists(ctx, fair.AnyBehind); err != nil || !found {
		return err
	}
	prune := fair.Prune
	if b.dialect().PG {
		prune = fair.PgPrune
	}
	_, err := b.write(ctx, prune)
	return err
}

// placeAll gives the jobs of a batch with a FairKey their places, in tx
// (fair.Place).
func (b *base) placeAll(ctx context.Context, tx *sql.Tx, jobs []*driver.Job) error {
	return fair.Place(ctx, tx, b.dialect(), jobs)
}
