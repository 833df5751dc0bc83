//! The generations of NIXL's exporter plug-in interface, as the released
//! wheels show them (docs/nixl-adapters.md has how each fact was checked).

/// How NIXL hands an event to an exporter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventLayout {
    /// 56 bytes: timestamp µs, category, 32-byte name, value (ring version 1).
    NamedWithTimestamp,
    /// 48 bytes: category, 32-byte name, value.
    Named,
    /// 16 bytes: category, event type, value.
    TypedWithCategory,
    /// 16 bytes: event type, 4 bytes padding, value.
    Typed,
}

impl EventLayout {
    /// The size of NIXL's event struct.
    pub const fn size(self) -> usize {
        match self {
            EventLayout::NamedWithTimestamp => 56,
            EventLayout::Named => 48,
            EventLayout::TypedWithCategory | EventLayout::Typed => 16,
        }
    }
}

/// One generation of the interface, and the adapter that serves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Generation {
    /// The adapter's name, also its directory: `nixl-1.5`.
    pub id: &'static str,
    /// The `nixl-cu12` releases that have this interface.
    pub releases: &'static [&'static str],
    /// The plug-in API version NIXL checks.
    pub api_version: u32,
    /// The event NIXL passes to `exportEvent`.
    pub events: EventLayout,
    /// Entries of an exporter's virtual table: destructor (two), `exportEvent`,
    /// and from 1.5 `onBatchBegin`, `onBatchEnd`.
    pub exporter_functions: u32,
    /// The C++ file (under `cpp/`) that declares this generation's interface.
    /// The build script compiles it with this entry's facts (id, releases,
    /// API version, event size, exporter functions) as macros, so the table
    /// here is their one source.
    pub source: &'static str,
}

impl Generation {
    /// Its releases as the adapter names them: `1.5.0 - 1.5.1`, or the one
    /// release (`1.1.0`).
    pub fn release_range(&self) -> String {
        match self.releases {
            [] => String::new(),
            [one] => (*one).to_owned(),
            [first, .., last] => format!("{first} - {last}"),
        }
    }
}

/// Every generation, oldest first.
pub const GENERATIONS: [Generation; 5] = [
    Generation {
        id: "nixl-0.9-1.0",
        releases: &["0.9.0", "0.10.0", "0.10.1", "1.0.0", "1.0.1"],
        api_version: 1,
        events: EventLayout::NamedWithTimestamp,
        exporter_functions: 3,
        source: "generation_named_timestamped.cpp",
    },
    Generation {
        id: "nixl-1.1",
        releases: &["1.1.0"],
        api_version: 2,
        events: EventLayout::Named,
        exporter_functions: 3,
        source: "generation_named.cpp",
    },
    Generation {
        id: "nixl-1.2",
        releases: &["1.2.0"],
        api_version: 2,
        events: EventLayout::TypedWithCategory,
        exporter_functions: 3,
        source: "generation_typed_category.cpp",
    },
    Generation {
        id: "nixl-1.3-1.4",
        releases: &["1.3.0", "1.3.1", "1.3.2", "1.4.0", "1.4.1"],
        api_version: 2,
        events: EventLayout::Typed,
        exporter_functions: 3,
        source: "generation_typed.cpp",
    },
    Generation {
        id: "nixl-1.5",
        releases: &["1.5.0", "1.5.1"],
        api_version: 2,
        events: EventLayout::Typed,
        exporter_functions: 5,
        source: "generation_typed_batches.cpp",
    },
];

/// The generation of a release (`1.4.1`), if it is one we know.
pub fn generation_of_release(release: &str) -> Option<&'static Generation> {
    GENERATIONS.iter().find(|g| g.releases.contains(&release))
}

/// The generation named `id` (`nixl-1.5`).
pub fn generation(id: &str) -> Option<&'static Generation> {
    GENERATIONS.iter().find(|g| g.id == id)
}

/// The names of exporters NIXL ships itself: our plug-ins of these names are
/// given to NIXL as `nixl_telemetry_<name>`, so that both can be installed.
pub const NIXL_OWN_EXPORTERS: [&str; 3] = ["prometheus", "prometheus_mp", "doca"];

/// The prefix that sets an adapter's name apart from NIXL's own exporters.
pub const OUR_PREFIX: &str = "nixl_telemetry_";

/// The name NIXL knows our plug-in `ours` by (`NIXL_TELEMETRY_EXPORTER`):
/// `otlp` → `otlp`, `prometheus` → `nixl_telemetry_prometheus`.
pub fn nixl_name(ours: &str) -> String {
    if NIXL_OWN_EXPORTERS.contains(&ours) {
        format!("{OUR_PREFIX}{ours}")
    } else {
        ours.to_owned()
    }
}

/// The plug-in of ours an adapter named `nixl_name` forwards to (the
/// adapter's own rule: the name less a leading `nixl_telemetry_`).
pub fn our_name(nixl_name: &str) -> &str {
    match nixl_name.strip_prefix(OUR_PREFIX) {
        Some(rest) if !rest.is_empty() => rest,
        _ => nixl_name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_release_has_one_generation_and_ids_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for g in GENERATIONS {
            assert!(seen.insert(g.id));
            for r in g.releases {
                assert_eq!(generation_of_release(r).map(|g| g.id), Some(g.id));
            }
        }
        assert_eq!(generation_of_release("1.6.0"), None);
        assert_eq!(
            generation("nixl-1.5").map(|g| g.exporter_functions),
            Some(5)
        );
    }

    #[test]
    fn names_round_trip_and_never_clash_with_nixl() {
        for ours in ["otlp", "csv", "prometheus", "prometheus_mp"] {
            let nixl = nixl_name(ours);
            assert_eq!(our_name(&nixl), ours);
            assert!(!NIXL_OWN_EXPORTERS.contains(&nixl.as_str()));
        }
        assert_eq!(nixl_name("prometheus"), "nixl_telemetry_prometheus");
        assert_eq!(our_name("nixl_telemetry_"), "nixl_telemetry_");
    }
}
