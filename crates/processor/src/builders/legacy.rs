//! Legacy counters, kept for existing dashboards.

use crate::error::{BindError, BuildError};
use crate::extract::{AttrValue, TelemetryData};
use crate::metrics::{MetricsUpdate, SlotCache};
use crate::registry::AttributeRegistry;
use crate::sanitize::{push_sanitized_piece, sanitize_into};
use crate::types::AttributeType;

use super::{bind_attribute, truthy_at, BuildContext, MetricBuilder, MetricKind};

#[derive(Debug, Clone, Copy)]
struct Slots {
    action: usize,
    version: usize,
    network: usize,
    success: usize,
    gpus: usize,
}

/// Counts jobs under four families of plain keys:
///
/// * `total_action_<action>_<pass|fail>`
/// * `version_<version>_action_<action>`
/// * `network_<network>_action_<action>`
/// * `gpu_<gpu>_action_<action>` for every entry of the GPU list (duplicates add up),
///   the GPU name sanitised in lower case.
///
/// Needs the string attributes `action`, `version`, `network`, the boolean `success`
/// and the list `gpus`.
#[derive(Debug)]
pub struct LegacyMetricsBuilder {
    slots: Option<Slots>,
    /// Slots of the three job counters by their inputs.
    jobs: SlotCache<3>,
    short: String,
    key: String,
}

impl Default for LegacyMetricsBuilder {
    fn default() -> Self {
        LegacyMetricsBuilder {
            slots: None,
            jobs: SlotCache::new(1 << 16),
            short: String::new(),
            key: String::new(),
        }
    }
}

impl LegacyMetricsBuilder {
    /// A new builder.
    pub fn new() -> LegacyMetricsBuilder {
        LegacyMetricsBuilder::default()
    }
}

fn text<'a>(data: &'a TelemetryData<'_>, index: usize) -> &'a str {
    match data.at(index) {
        AttrValue::String(s) => s,
        _ => "",
    }
}

impl MetricBuilder for LegacyMetricsBuilder {
    fn name(&self) -> &str {
        "legacy"
    }

    fn bind(&mut self, registry: &AttributeRegistry) -> Result<(), BindError> {
        let need = |attribute, expected| {
            bind_attribute(registry, "legacy", attribute, expected, true)
                .map(|i| i.unwrap_or_default())
        };
        self.slots = Some(Slots {
            action: need("action", AttributeType::String)?,
            version: need("version", AttributeType::String)?,
            network: need("network", AttributeType::String)?,
            success: need("success", AttributeType::Boolean)?,
            gpus: need("gpus", AttributeType::List)?,
        });
        Ok(())
    }

    fn build(
        &mut self,
        metrics: &mut MetricsUpdate<'_>,
        data: &TelemetryData<'_>,
        _context: &BuildContext,
    ) -> Result<(), BuildError> {
        let slots = self
            .slots
            .ok_or_else(|| BuildError::Custom("legacy builder used before bind".into()))?;
        let action = text(data, slots.action);
        let version = text(data, slots.version);
        let network = text(data, slots.network);
        let pass = truthy_at(data, Some(slots.success));

        // The three job counters share one slot-cache entry: action, version, network
        // (sanitised, so a separator they cannot contain keeps them apart) and status.
        let short = &mut self.short;
        short.clear();
        for piece in [action, version, network] {
            push_sanitized_piece(short, piece);
        }
        short.push(if pass { 'p' } else { 'f' });
        let mut entry = self.jobs.entry(metrics, short);
        entry.add(metrics, 0, 1, |key| {
            key.push_str("total_action_");
            key.push_str(action);
            key.push_str(if pass { "_pass" } else { "_fail" });
        })?;
        entry.add(metrics, 1, 1, |key| {
            key.push_str("version_");
            key.push_str(version);
            key.push_str("_action_");
            key.push_str(action);
        })?;
        entry.add(metrics, 2, 1, |key| {
            key.push_str("network_");
            key.push_str(network);
            key.push_str("_action_");
            key.push_str(action);
        })?;

        let key = &mut self.key;
        if let Some(groups) = data.groups_at(slots.gpus) {
            // Equal names add up in one step: the same result as one add per entry.
            for (gpu, count) in groups.iter() {
                key.clear();
                key.push_str("gpu_");
                sanitize_into(key, gpu, false);
                key.push_str("_action_");
                key.push_str(action);
                metrics.add(key, i64::from(count))?;
            }
        }
        Ok(())
    }

    fn metric_kind(&self, family: &str) -> Option<MetricKind> {
        ["total_action_", "version_", "network_", "gpu_"]
            .iter()
            .any(|p| family.starts_with(p))
            .then_some(MetricKind::Counter)
    }
}
