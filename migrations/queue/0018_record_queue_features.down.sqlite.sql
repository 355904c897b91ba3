DROP TRIGGER jobs_features;
DROP TABLE queue_features;
