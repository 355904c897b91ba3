-- Composed jobs: chains, batches and workflows are flows, each a graph of
-- steps. A step is a job: those whose dependencies have not all ended
-- are held here, in queue_steps, with the job they become; the others are
-- in jobs (and then failed_jobs), which say whose step they are in flow.
-- A job's result, when its handler records one, is kept in queue_results
-- until its flow, or for a job of no flow its age, is pruned. Times are
-- Unix milliseconds on the queue's clock.
ALTER TABLE jobs ADD COLUMN flow TEXT;
ALTER TABLE failed_jobs ADD COLUMN flow TEXT;

-- The failed jobs of flows, for a retry of failed jobs to find them; jobs
-- has no index on flow (a flow's jobs are found through queue_steps), so
-- that a dispatch maintains no more index than it did.
CREATE INDEX failed_jobs_flow ON failed_jobs (flow) WHERE flow IS NOT NULL;

CREATE TABLE queue_flows (
    id                TEXT PRIMARY KEY,
    kind              TEXT NOT NULL,            -- chain, batch or workflow
    name              TEXT NOT NULL,
    created_at        INTEGER NOT NULL,
    finished_at       INTEGER,                   -- when its last step ended
    state             TEXT NOT NULL,            -- running, succeeded, failed, cancelled
    cancel_on_failure INTEGER NOT NULL,         -- a batch without allow-failures
    total             INTEGER NOT NULL,         -- its steps, callbacks left out
    pending           INTEGER NOT NULL,         -- its steps not ended
    succeeded         INTEGER NOT NULL,
    failed            INTEGER NOT NULL          -- failed, cancelled or failed for a dependency
) WITHOUT ROWID;

-- Pruning the flows that ended.
CREATE INDEX queue_flows_finished_at ON queue_flows (finished_at) WHERE finished_at IS NOT NULL;

CREATE TABLE queue_steps (
    job_id        TEXT PRIMARY KEY,
    flow_id       TEXT NOT NULL,
    seq           INTEGER NOT NULL,             -- its place in the flow, in the order added
    step          TEXT NOT NULL,                -- its name in the flow
    role          TEXT NOT NULL,                -- step, then, catch or finally
    state         TEXT NOT NULL,                -- held, queued, succeeded, failed, cancelled, skipped
    waiting       INTEGER NOT NULL,             -- its dependencies not ended
    failed_deps   INTEGER NOT NULL,             -- its dependencies ended otherwise than succeeded
    run_if_failed INTEGER NOT NULL,
    error         TEXT,                         -- why it ended, when it did not succeed
    ended_at      INTEGER,
    -- The job it becomes once released; NULL from then on.
    queue         TEXT NOT NULL,
    name          TEXT NOT NULL,
    payload       TEXT,
    max_attempts  INTEGER NOT NULL,
    backoff       TEXT NOT NULL,
    timeout_ms    INTEGER NOT NULL,
    delay_ms      INTEGER NOT NULL,
    meta          TEXT
) WITHOUT ROWID;

CREATE INDEX queue_steps_flow ON queue_steps (flow_id, seq);

CREATE TABLE queue_edges (
    from_id TEXT NOT NULL,                      -- the step depended on
    to_id   TEXT NOT NULL,                      -- the step that waits for it
    flow_id TEXT NOT NULL,
    PRIMARY KEY (from_id, to_id)
) WITHOUT ROWID;

CREATE INDEX queue_edges_to ON queue_edges (to_id);
CREATE INDEX queue_edges_flow ON queue_edges (flow_id);

CREATE TABLE queue_results (
    job_id     TEXT PRIMARY KEY,
    flow_id    TEXT,
    result     TEXT NOT NULL,                   -- JSON
    created_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE INDEX queue_results_created_at ON queue_results (created_at) WHERE flow_id IS NULL;
CREATE INDEX queue_results_flow ON queue_results (flow_id) WHERE flow_id IS NOT NULL;
