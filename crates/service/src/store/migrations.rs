//! The stores' schema migrations, kept as SQL files in `migrations/<kind>/` and
//! embedded here in version order.

/// One schema version.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Migration {
    /// The version it brings the schema to (1, 2, …).
    pub version: i64,
    /// Its file name.
    pub name: &'static str,
    /// The SQL it runs (one or more statements).
    pub sql: &'static str,
}

/// The table that records the versions applied (created before the first migration).
pub(crate) const MIGRATIONS_TABLE: &str = "nixl_telemetry_migrations";

/// SQLite's migrations, oldest first.
pub(crate) const SQLITE: &[Migration] = &[
    Migration {
        version: 1,
        name: "0001_metrics.sql",
        sql: include_str!("../../migrations/sqlite/0001_metrics.sql"),
    },
    Migration {
        version: 2,
        name: "0002_writers.sql",
        sql: include_str!("../../migrations/sqlite/0002_writers.sql"),
    },
];

/// PostgreSQL's migrations, oldest first.
pub(crate) const POSTGRES: &[Migration] = &[
    Migration {
        version: 1,
        name: "0001_metrics.sql",
        sql: include_str!("../../migrations/postgres/0001_metrics.sql"),
    },
    Migration {
        version: 2,
        name: "0002_writers.sql",
        sql: include_str!("../../migrations/postgres/0002_writers.sql"),
    },
];

/// The newest version of a list.
pub(crate) fn newest(migrations: &[Migration]) -> i64 {
    migrations.last().map_or(0, |m| m.version)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every file of a kind's folder is listed, in order, with the version its name
    /// starts with, and the embedded text is the file's.
    #[test]
    fn the_lists_are_the_folders() {
        for (kind, list) in [("sqlite", SQLITE), ("postgres", POSTGRES)] {
            let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("migrations")
                .join(kind);
            let mut files: Vec<String> = std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect();
            files.sort();
            let names: Vec<&str> = list.iter().map(|m| m.name).collect();
            assert_eq!(files, names, "{kind}");
            for (i, m) in list.iter().enumerate() {
                assert_eq!(m.version, i as i64 + 1, "{kind} {}", m.name);
                assert_eq!(m.name[..4].parse::<i64>().unwrap(), m.version);
                assert_eq!(std::fs::read_to_string(dir.join(m.name)).unwrap(), m.sql);
            }
        }
    }
}
