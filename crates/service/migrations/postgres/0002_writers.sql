-- Each writer (one per running service instance) records, in every transaction
-- that applies records, the number of that transaction. When a commit's answer
-- is lost (the connection broke or the answer came too late), the writer reads
-- its row again after taking the write lock, and so learns whether the commit
-- happened before it answers the records' clients.
CREATE TABLE nixl_telemetry_writers (
    writer TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    batch BIGINT NOT NULL
);

-- Ends the transaction with an error when the server runs it after `deadline`
-- (seconds since 1970 on the server's clock): a transaction its writer stopped
-- waiting for (a frozen server, a stalled network) is rolled back when it finally
-- runs, never committed after its records were answered 503.
CREATE FUNCTION nixl_telemetry_check_deadline(deadline DOUBLE PRECISION) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF extract(epoch FROM clock_timestamp()) > deadline THEN
        RAISE EXCEPTION 'the writer stopped waiting for this transaction; rolled back'
            USING ERRCODE = 'query_canceled';
    END IF;
END
$$;
