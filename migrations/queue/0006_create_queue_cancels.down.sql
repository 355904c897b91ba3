DROP TABLE queue_cancels;
