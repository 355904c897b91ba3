DROP TABLE visits;
