DROP TABLE queue_clock;
