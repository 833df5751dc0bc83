//! Legacy counters, kept for existing dashboards.

use crate::error::{BindError, BuildError};
use crate::extract::{AttrValue, TelemetryData};
use crate::metrics::{ClassMemo, MetricsUpdate, Write};
use crate::registry::AttributeRegistry;
use crate::sanitize::sanitize_into;
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
#[must_use]
pub struct LegacyMetricsBuilder {
    slots: Option<Slots>,
    /// Per record class: the writes the rules below made for it.
    classes: ClassMemo,
    /// The attribute positions the keys depend on (0: none usable).
    mask: u64,
    writes: Vec<Write>,
    key: String,
}

impl Default for LegacyMetricsBuilder {
    fn default() -> Self {
        LegacyMetricsBuilder {
            slots: None,
            classes: ClassMemo::new(1 << 16),
            mask: 0,
            writes: Vec::new(),
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
        // Seen this class before: the same writes.
        let class = data.class(self.mask);
        if let Some(writes) = self.classes.get(metrics, class, 0) {
            return metrics.apply(writes, 0);
        }
        let action = text(data, slots.action);
        let version = text(data, slots.version);
        let network = text(data, slots.network);
        let pass = truthy_at(data, Some(slots.success));

        let key = &mut self.key;
        let writes = &mut self.writes;
        writes.clear();
        let mut count = |key: &mut String, amount: i64| -> Result<(), BuildError> {
            writes.push(Write::per_job(metrics.slot(key)?, amount));
            key.clear();
            Ok(())
        };
        key.clear();
        key.push_str("total_action_");
        key.push_str(action);
        key.push_str(if pass { "_pass" } else { "_fail" });
        count(key, 1)?;
        key.push_str("version_");
        key.push_str(version);
        key.push_str("_action_");
        key.push_str(action);
        count(key, 1)?;
        key.push_str("network_");
        key.push_str(network);
        key.push_str("_action_");
        key.push_str(action);
        count(key, 1)?;
        if let Some(groups) = data.groups_at(slots.gpus) {
            // Equal names add up in one write: the same result as one add per entry.
            for (gpu, n) in groups.iter() {
                key.push_str("gpu_");
                sanitize_into(key, gpu, false);
                key.push_str("_action_");
                key.push_str(action);
                count(key, i64::from(n))?;
            }
        }
        metrics.apply(&self.writes, 0)?;
        self.classes.insert(metrics, class, &self.writes, false);
        Ok(())
    }

    fn metric_kind(&self, family: &str) -> Option<MetricKind> {
        ["total_action_", "version_", "network_", "gpu_"]
            .iter()
            .any(|p| family.starts_with(p))
            .then_some(MetricKind::Counter)
    }
}
