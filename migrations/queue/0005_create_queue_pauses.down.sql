DROP TABLE queue_pauses;
