//! The comprehensive name: every configured attribute in one metric name.

use std::borrow::Cow;

use crate::error::{BindError, BuildError};
use crate::extract::{NameGroups, TelemetryData};
use crate::metrics::{ClassMemo, MetricsUpdate, Write};
use crate::registry::AttributeRegistry;
use crate::sanitize::{write_gpu_identifier, GpuIdScratch};
use crate::types::AttributeType;

use super::{bind_attribute, class_mask, truthy_at, BuildContext, MetricBuilder, MetricKind};

/// Attributes with a metric order at or above this come after the status part.
const STATUS_ORDER: i64 = 4;

/// One part of the name, in order.
#[derive(Debug, Clone)]
enum Part {
    /// `<name>_<value>` for a registry attribute (`prefix` is `<name>_`).
    Attribute { index: usize, prefix: String },
    /// `status_<pass|fail>`.
    Status,
}

/// Counts jobs under one name made of every attribute marked for the comprehensive
/// name, sorted by `metric_order` (ties keep registry order), then
/// `status_<pass|fail>` (inserted once, before the first attribute whose order is 4 or
/// more, or at the end), then `gpu_<identifier>`:
/// `network_<n>_action_<a>_version_<v>_status_<s>_gpu_<id>` with the built-in registry.
///
/// Uses the boolean `success` (false if absent) and the list `gpus` (`["unknown"]` if
/// absent) if the registry has them; the GPU identifier is
/// [`crate::create_gpu_identifier`]'s.
#[derive(Debug)]
#[must_use]
pub struct ComprehensiveMetricsBuilder {
    parts: Option<Vec<Part>>,
    first_prefix: String,
    success: Option<usize>,
    gpus: Option<usize>,
    /// Per record class: the write the rules below made for it.
    classes: ClassMemo,
    /// The attribute positions the name depends on (0: none usable).
    mask: u64,
    key: String,
    scratch: GpuIdScratch,
}

impl Default for ComprehensiveMetricsBuilder {
    fn default() -> Self {
        ComprehensiveMetricsBuilder {
            parts: None,
            first_prefix: String::new(),
            success: None,
            gpus: None,
            classes: ClassMemo::new(1 << 16),
            mask: 0,
            key: String::new(),
            scratch: GpuIdScratch::default(),
        }
    }
}

impl ComprehensiveMetricsBuilder {
    /// A new builder.
    pub fn new() -> ComprehensiveMetricsBuilder {
        ComprehensiveMetricsBuilder::default()
    }
}

impl MetricBuilder for ComprehensiveMetricsBuilder {
    fn name(&self) -> &str {
        "comprehensive"
    }

    fn bind(&mut self, registry: &AttributeRegistry) -> Result<(), BindError> {
        let name = "comprehensive";
        self.success = bind_attribute(registry, name, "success", AttributeType::Boolean, false)?;
        self.gpus = bind_attribute(registry, name, "gpus", AttributeType::List, false)?;
        let mut included: Vec<(usize, i64)> = registry
            .attributes()
            .iter()
            .enumerate()
            .filter(|(_, a)| a.include_in_comprehensive)
            .map(|(i, a)| (i, a.metric_order))
            .collect();
        included.sort_by_key(|&(_, order)| order); // stable: ties keep registry order
        let mut parts = Vec::with_capacity(included.len() + 1);
        let mut status_placed = false;
        for (index, order) in included {
            if !status_placed && order >= STATUS_ORDER {
                parts.push(Part::Status);
                status_placed = true;
            }
            parts.push(Part::Attribute {
                index,
                prefix: format!("{}_", registry.attributes()[index].name),
            });
        }
        if !status_placed {
            parts.push(Part::Status);
        }
        self.mask = class_mask(
            parts
                .iter()
                .filter_map(|part| match part {
                    Part::Attribute { index, .. } => Some(*index),
                    Part::Status => None,
                })
                .chain(self.success)
                .chain(self.gpus),
        );
        self.first_prefix = match &parts[0] {
            Part::Attribute { prefix, .. } => prefix.clone(),
            Part::Status => "status_".to_owned(),
        };
        self.parts = Some(parts);
        Ok(())
    }

    fn build(
        &mut self,
        metrics: &mut MetricsUpdate<'_>,
        data: &TelemetryData<'_>,
        _context: &BuildContext,
    ) -> Result<(), BuildError> {
        let parts = self
            .parts
            .as_deref()
            .ok_or_else(|| BuildError::Custom("comprehensive builder used before bind".into()))?;
        let class = data.class(self.mask);
        if let Some(writes) = self.classes.get(metrics, class, 0) {
            return metrics.apply(writes, 0);
        }
        let success = truthy_at(data, self.success);
        let gpus = match self.gpus.and_then(|i| data.groups_at(i)) {
            Some(groups) => groups,
            None => Cow::Owned(NameGroups::from_names(["unknown"])),
        };
        let key = &mut self.key;
        key.clear();
        for part in parts {
            match part {
                Part::Attribute { index, prefix } => {
                    key.push_str(prefix);
                    data.at(*index).write_text(key);
                }
                Part::Status => key.push_str(if success {
                    "status_pass"
                } else {
                    "status_fail"
                }),
            }
            key.push('_');
        }
        key.push_str("gpu_");
        write_gpu_identifier(gpus.iter(), key, &mut self.scratch);
        let writes = [Write::per_job(metrics.slot(key)?, 1)];
        metrics.apply(&writes, 0)?;
        self.classes.insert(metrics, class, &writes, false);
        Ok(())
    }

    fn metric_kind(&self, family: &str) -> Option<MetricKind> {
        let named_like_ours = self.parts.is_some()
            && family.starts_with(&self.first_prefix)
            && family.contains("status_")
            && family.contains("_gpu_");
        named_like_ours.then_some(MetricKind::Counter)
    }
}
