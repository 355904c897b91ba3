DROP TRIGGER queue_steps_features;
DROP TRIGGER queue_held_features;
DROP TRIGGER failed_jobs_features;
DROP TABLE queue_features;
