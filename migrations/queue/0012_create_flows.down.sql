DROP TABLE queue_results;
DROP TABLE queue_edges;
DROP TABLE queue_steps;
DROP TABLE queue_flows;
DROP INDEX failed_jobs_flow;
ALTER TABLE failed_jobs DROP COLUMN flow;
ALTER TABLE jobs DROP COLUMN flow;
