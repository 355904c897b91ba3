DROP TABLE schedule_ticks;
