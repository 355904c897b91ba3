CREATE FUNCTION navree_jobs_admit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM navree_admit(OLD.limit_key, OLD.available_at);
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_admit AFTER DELETE ON jobs FOR EACH ROW WHEN (OLD.limit_key IS NOT NULL) EXECUTE FUNCTION navree_jobs_admit();
