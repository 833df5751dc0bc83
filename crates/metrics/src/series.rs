//! The run-time series of an agent (error statuses and per-name counters) and
//! the bounded map from event names to them.

use std::collections::HashMap;
use std::sync::Arc;

use nixl_telemetry_abi::Category;

use crate::name_cache::{NameKey, NameMap};
use crate::naming::{error_status, per_name_sample, SeriesNaming};
use nixl_telemetry_abi::names::ERROR_STATUSES;

/// The most distinct (category, name) pairs one agent maps to per-name
/// counters or to error statuses other than the known ones. Events with
/// further names are counted in `agent_telemetry_unmapped_events_total`
/// ([`slot::UNMAPPED`](crate::slot::UNMAPPED)), so a misbehaving backend
/// cannot grow an exporter's memory or its output without bound.
pub const MAX_NAMES_PER_AGENT: usize = 256;

/// The most run-time series an agent can have: the known error statuses and
/// one per name up to [`MAX_NAMES_PER_AGENT`].
pub const MAX_SERIES: usize = ERROR_STATUSES.len() + MAX_NAMES_PER_AGENT;

/// A series created at run time.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Series {
    /// `agent_errors_total{status="…"}`: ERROR events, one per event.
    Error {
        /// The status: the event name without `NIXL_ERR_`, lower case
        /// ([`error_status`]).
        status: Box<str>,
    },
    /// A per-name counter: the sum of the values of the events with this
    /// name in this category (labelled `category`).
    Counter {
        /// The sample name, ending in `_total` ([`per_name_sample`]).
        sample: Box<str>,
        /// The events' category.
        category: Category,
    },
}

impl Series {
    /// The series of an event of `category` called `name` that is not a
    /// built-in one ([`EventEffect::PerName`](crate::EventEffect::PerName)):
    /// an error status for an ERROR event, a per-name counter otherwise;
    /// `None` when the counter's name clashes with a name `naming` reserves
    /// even with its category in front.
    pub fn of_event(category: Category, name: &[u8], naming: SeriesNaming) -> Option<Series> {
        if category == Category::ERROR {
            Some(Series::Error {
                status: error_status(name).into(),
            })
        } else {
            per_name_sample(name, category, naming).map(|sample| Series::Counter {
                sample: sample.into(),
                category,
            })
        }
    }

    /// The category of the series' events.
    pub fn category(&self) -> Category {
        match self {
            Series::Error { .. } => Category::ERROR,
            Series::Counter { category, .. } => *category,
        }
    }

    /// The status of an error series, the sample name of a counter.
    pub fn name(&self) -> &str {
        match self {
            Series::Error { status } => status,
            Series::Counter { sample, .. } => sample,
        }
    }

    /// What one event adds to the series: one for an error, its value otherwise.
    #[inline]
    pub fn amount(category: i32, value: u64) -> u64 {
        if category == Category::ERROR.0 {
            1
        } else {
            value
        }
    }
}

/// Index meaning "this name is counted as unmapped".
const UNMAPPED: u32 = u32::MAX;

/// Event names to series, bounded: the known error statuses exist from the
/// start; further names are mapped on first sight up to
/// [`MAX_NAMES_PER_AGENT`], then counted as unmapped (with one warning), so
/// memory stays bounded whatever the events are.
#[derive(Debug)]
pub(crate) struct SeriesMap {
    agent: Box<str>,
    naming: SeriesNaming,
    /// (category, name) → series index or [`UNMAPPED`]: one hash of the
    /// name field per event.
    names: NameMap<u32>,
    /// Series → index, so names that map to the same series share it.
    index: HashMap<Series, u32>,
    list: Vec<Series>,
    /// Names mapped beyond the known statuses (bounded by [`MAX_NAMES_PER_AGENT`]).
    names_taken: usize,
    warned_limit: bool,
}

impl SeriesMap {
    /// A map with the known error statuses, for `agent` (named in the warning).
    pub(crate) fn new(agent: &str, naming: SeriesNaming) -> SeriesMap {
        let mut map = SeriesMap {
            agent: agent.into(),
            naming,
            names: NameMap::default(),
            index: HashMap::new(),
            list: Vec::with_capacity(ERROR_STATUSES.len()),
            names_taken: 0,
            warned_limit: false,
        };
        for status in ERROR_STATUSES {
            let index = map.push(Series::Error {
                status: status.into(),
            });
            let raw = format!("NIXL_ERR_{}", status.to_ascii_uppercase());
            map.names
                .insert(NameKey::new(Category::ERROR.0, raw.as_bytes()), index);
        }
        map
    }

    pub(crate) fn agent(&self) -> &str {
        &self.agent
    }

    pub(crate) fn naming(&self) -> SeriesNaming {
        self.naming
    }

    /// The series, in order of first sight (the known statuses first).
    pub(crate) fn list(&self) -> &[Series] {
        &self.list
    }

    /// How many names are remembered (bounded).
    #[cfg(test)]
    pub(crate) fn remembered(&self) -> usize {
        self.names.len()
    }

    /// The series index of an event of `category` called `name`, mapping it
    /// on first sight; `None` when it is counted as unmapped.
    #[inline]
    pub(crate) fn resolve(&mut self, category: i32, name: &[u8]) -> Option<usize> {
        let key = NameKey::new(category, name);
        let index = match self.names.get(&key) {
            Some(&i) => i,
            None => self.map_name(key, name),
        };
        (index != UNMAPPED).then_some(index as usize)
    }

    /// Maps a name seen for the first time; [`UNMAPPED`] past the limit (then
    /// the name is not remembered, so memory stays bounded), except for an
    /// error whose status already has a series (the known ones among them):
    /// it still counts there, unremembered.
    #[cold]
    fn map_name(&mut self, key: NameKey, name: &[u8]) -> u32 {
        let category = Category(key.category);
        if self.names_taken >= MAX_NAMES_PER_AGENT {
            if category == Category::ERROR {
                let series = Series::Error {
                    status: error_status(name).into(),
                };
                if let Some(&i) = self.index.get(&series) {
                    return i;
                }
            }
            if !self.warned_limit {
                self.warned_limit = true;
                tracing::warn!(
                    agent = %self.agent,
                    name = %String::from_utf8_lossy(name),
                    limit = MAX_NAMES_PER_AGENT,
                    "too many distinct event names; further ones are counted in agent_telemetry_unmapped_events_total"
                );
            }
            return UNMAPPED;
        }
        self.names_taken += 1;
        let index = match Series::of_event(category, name, self.naming) {
            Some(series) => match self.index.get(&series) {
                Some(&i) => i,
                None => self.push(series),
            },
            None => UNMAPPED,
        };
        self.names.insert(key, index);
        index
    }

    fn push(&mut self, series: Series) -> u32 {
        debug_assert!(self.list.len() < MAX_SERIES);
        let index = self.list.len() as u32;
        self.index.insert(series.clone(), index);
        self.list.push(series);
        index
    }

    /// The list as a shared slice.
    pub(crate) fn shared(&self) -> Arc<[Series]> {
        Arc::from(self.list.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_statuses_come_first_and_spellings_share_a_series() {
        let mut map = SeriesMap::new("a", SeriesNaming::Prometheus);
        assert_eq!(map.list().len(), ERROR_STATUSES.len());
        let backend = map.resolve(Category::ERROR.0, b"NIXL_ERR_BACKEND").unwrap();
        assert_eq!(
            map.resolve(Category::ERROR.0, b"nixl_err_backend"),
            Some(backend)
        );
        assert_eq!(map.resolve(Category::ERROR.0, b"BACKEND"), Some(backend));
        assert_eq!(map.list().len(), ERROR_STATUSES.len());
        let fresh = map.resolve(Category::ERROR.0, b"NIXL_ERR_FRESH").unwrap();
        assert_eq!(
            map.list()[fresh],
            Series::Error {
                status: "fresh".into()
            }
        );
        let counter = map.resolve(Category::BACKEND.0, b"ucx.rndv").unwrap();
        assert_eq!(map.resolve(Category::BACKEND.0, b"ucx-rndv"), Some(counter));
        assert_ne!(map.resolve(Category::CUSTOM.0, b"ucx.rndv"), Some(counter));
        assert_eq!(map.list()[counter].category(), Category::BACKEND);
        assert_eq!(map.list()[counter].name(), "ucx_rndv_total");
    }

    #[test]
    fn past_the_limit_only_errors_of_known_series_still_count() {
        let mut map = SeriesMap::new("a", SeriesNaming::Otlp);
        for i in 0..MAX_NAMES_PER_AGENT {
            assert!(map
                .resolve(Category::CUSTOM.0, format!("n{i}").as_bytes())
                .is_some());
        }
        let remembered = map.remembered();
        assert_eq!(map.resolve(Category::CUSTOM.0, b"one_more"), None);
        assert!(map.resolve(Category::ERROR.0, b"backend").is_some());
        assert_eq!(map.resolve(Category::ERROR.0, b"NIXL_ERR_BRAND_NEW"), None);
        assert!(map.resolve(Category::CUSTOM.0, b"n0").is_some());
        assert_eq!(map.remembered(), remembered);
        assert_eq!(map.list().len(), MAX_SERIES);
    }
}
