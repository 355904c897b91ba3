-- PostgreSQL stamps reservations with its own clock: nothing to create.
SELECT 1;
