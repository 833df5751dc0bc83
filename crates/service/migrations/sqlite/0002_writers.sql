-- Each writer (one per running service instance) records, in every transaction
-- that applies records, the number of that transaction: when a commit's answer
-- is lost, the writer reads its row again and so learns whether it happened.
CREATE TABLE nixl_telemetry_writers (
    writer TEXT NOT NULL PRIMARY KEY,
    batch INTEGER NOT NULL
) WITHOUT ROWID;
