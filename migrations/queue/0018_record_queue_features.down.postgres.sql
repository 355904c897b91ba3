DROP TRIGGER jobs_features ON jobs;
DROP FUNCTION navree_features();
DROP TABLE queue_features;
