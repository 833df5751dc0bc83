//! Legacy counters, kept for existing dashboards.

use crate::error::{BindError, BuildError};
use crate::extract::{AttrValue, TelemetryData};
use crate::metrics::{ClassMemo, MetricsUpdate, Slot, SlotCache};
use crate::registry::AttributeRegistry;
use crate::sanitize::{push_sanitized_piece, sanitize_into};
use crate::types::AttributeType;

use super::{bind_attribute, class_mask, truthy_at, BuildContext, MetricBuilder, MetricKind};

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
    /// Per record class: the three job counters' slots, and each GPU counter's slot
    /// with the number of such GPUs.
    classes: ClassMemo<3>,
    /// The attribute positions the keys depend on (0: none usable).
    mask: u64,
    gpu_slots: Vec<(Slot, i64)>,
    short: String,
    key: String,
}

impl Default for LegacyMetricsBuilder {
    fn default() -> Self {
        LegacyMetricsBuilder {
            slots: None,
            jobs: SlotCache::new(1 << 16),
            classes: ClassMemo::new(1 << 16),
            mask: 0,
            gpu_slots: Vec::new(),
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
        let slots = Slots {
            action: need("action", AttributeType::String)?,
            version: need("version", AttributeType::String)?,
            network: need("network", AttributeType::String)?,
            success: need("success", AttributeType::Boolean)?,
            gpus: need("gpus", AttributeType::List)?,
        };
        self.mask = class_mask([
            slots.action,
            slots.version,
            slots.network,
            slots.success,
            slots.gpus,
        ]);
        self.slots = Some(slots);
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
        // Seen this class before: the same keys, in the same order.
        let class = data.class(self.mask);
        if let Some(memo) = class.and_then(|c| self.classes.get(metrics, c)) {
            for which in 0..3 {
                if let Some(slot) = memo.slot(which) {
                    metrics.add_at(slot, 1)?;
                }
            }
            for (slot, count) in memo.amounts() {
                metrics.add_at(slot, count)?;
            }
            return Ok(());
        }
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
        let job_slots = [entry.slot(0), entry.slot(1), entry.slot(2)];

        let key = &mut self.key;
        self.gpu_slots.clear();
        if let Some(groups) = data.groups_at(slots.gpus) {
            // Equal names add up in one step: the same result as one add per entry.
            for (gpu, count) in groups.iter() {
                key.clear();
                key.push_str("gpu_");
                sanitize_into(key, gpu, false);
                key.push_str("_action_");
                key.push_str(action);
                let slot = metrics.slot(key)?;
                metrics.add_at(slot, i64::from(count))?;
                self.gpu_slots.push((slot, i64::from(count)));
            }
        }
        if let Some(class) = class {
            self.classes
                .insert(metrics, class, job_slots, 0, &self.gpu_slots);
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
