DROP INDEX queue_held_unique_key;
