DROP TABLE queue_throughput;
