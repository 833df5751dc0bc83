-- The metrics map: one row per metric key.
CREATE TABLE nixl_telemetry_metrics (
    key TEXT NOT NULL PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;

-- Named values of the store. Every write transaction updates `last_updated`,
-- the time of the last applied record (the time builder's `old_now`).
CREATE TABLE nixl_telemetry_state (
    name TEXT NOT NULL PRIMARY KEY,
    value TEXT
) WITHOUT ROWID;

INSERT INTO nixl_telemetry_state (name, value) VALUES ('last_updated', NULL);
