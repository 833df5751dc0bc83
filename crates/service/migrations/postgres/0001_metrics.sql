-- The metrics map: one row per metric key (byte order, as the JSON form sorts).
CREATE TABLE nixl_telemetry_metrics (
    key TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    value BIGINT NOT NULL
);

-- Named values of the store. Every write transaction locks the `last_updated`
-- row first (SELECT ... FOR UPDATE): writers of every instance take turns on
-- it, so each applies its records to the metrics the previous one left.
CREATE TABLE nixl_telemetry_state (
    name TEXT NOT NULL PRIMARY KEY,
    value TEXT
);

INSERT INTO nixl_telemetry_state (name, value) VALUES ('last_updated', NULL);
