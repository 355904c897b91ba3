DROP TABLE queue_workers;
