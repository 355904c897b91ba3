DROP TABLE failed_jobs;
DROP TABLE jobs;
