CREATE TABLE visits (
    visited_at BIGINT NOT NULL -- Unix milliseconds
);
