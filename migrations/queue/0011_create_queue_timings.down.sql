DROP TABLE queue_timings;
