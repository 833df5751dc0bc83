//! Prometheus-style labeled metrics.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use crate::error::{BindError, BuildError};
use crate::extract::{AttrValue, ListValue, NameGroups, TelemetryData};
use crate::hash::KeyHashState;
use crate::metrics::{ClassMemo, MetricsUpdate, Write};
use crate::registry::AttributeRegistry;
use crate::sanitize::{escape_label_value_into, push_uint};
use crate::types::AttributeType;
use crate::unicode::{is_alpha, is_digit, push_upper};

use super::{
    bind_attribute, class_mask, integer_at, truthy_at, BuildContext, MetricBuilder, MetricKind,
};

/// Jobs by labels.
pub const JOB_TOTAL: &str = "tao_job_total";
/// Sum of `time_lapsed` by labels.
pub const JOB_DURATION_SUM: &str = "tao_job_duration_sum";
/// Sum of GPU count × `time_lapsed` by labels.
pub const JOB_GPU_TIME_SUM: &str = "tao_job_gpu_time_sum";
/// GPUs used, by GPU type.
pub const JOB_GPU_TOTAL: &str = "tao_job_gpu_total";

/// GPU types from newest to oldest: the primary GPU of a job is the first of these it
/// uses.
pub const GPU_PRIORITY: &[&str] = &[
    "RTX5090",
    "RTX5080",
    "RTX5070",
    "RTX5060",
    "RTX5050",
    "RTX6000",
    "RTX5000",
    "RTX4500",
    "RTX4000",
    "RTX2000",
    "T5000",
    "T4000",
    "GB300",
    "B300",
    "GB200",
    "B200",
    "GH200",
    "H200",
    "H100",
    "L40S",
    "L40",
    "L4",
    "RTX4090",
    "RTX4080",
    "RTX4070",
    "RTX4060",
    "RTX4050",
    "RTXA6000",
    "RTXA5000",
    "RTXA4500",
    "RTXA4000",
    "RTXA2000",
    "ORIN",
    "A40",
    "A16",
    "A10",
    "A2",
    "RTX3090",
    "RTX3080",
    "RTX3070",
    "RTX3060",
    "RTX3050",
    "A100",
    "A30",
    "T4",
    "T2000",
    "T1200",
    "T1000",
    "T600",
    "T500",
    "T400",
    "RTX2080",
    "RTX2070",
    "RTX2060",
    "QUADRO8000",
    "QUADRO6000",
    "QUADRO5000",
    "QUADRO4000",
    "V100",
    "TITAN",
    "P100",
    "P40",
    "P6",
    "P4",
    "GTX1080",
    "GTX1070",
    "GTX1060",
    "GTX1050",
    "K80",
    "K40",
    "K20",
    "M60",
    "M40",
];

const PREFIXES_SKIPPED_FOR_MODEL: [&str; 6] =
    ["NVIDIA", "GEFORCE", "QUADRO", "TESLA", "JETSON", "TITAN"];
const PREFIXES_SKIPPED_FOR_FALLBACK: [&str; 4] = ["NVIDIA", "GEFORCE", "QUADRO", "TESLA"];

/// The GPU type of a GPU name, as the labeled builder labels it (`NVIDIA A100-SXM4-80GB`
/// → `A100`, `GeForce RTX 4090` → `RTX4090`, `Jetson AGX Orin` → `ORIN`).
///
/// The name is upper-cased with full Unicode case mapping (`ß` → `SS`) and spaces and
/// `-` become `_`; no other sanitising. Then, first match wins: `SPARK`; a contained
/// `GB300`/`GB200`/`GB100`/`GH200`/`GH100`; a contained `B300`/`B200`/`B100`/`H200`/`H100`;
/// for a name containing `RTX`, the part after a part `RTX`, less a `TI` and then an `ADA`
/// suffix, prefixed with `RTX`; for a name containing `JETSON`, `THOR` or `ORIN`, the
/// first part starting with `T` that has a digit, else `THOR` or `ORIN`; a contained
/// `L40S`/`L40`/`L4`; the first part with both a digit and a letter that is not a vendor
/// or family word; the first non-empty part that is not a vendor word; else the name
/// without `NVIDIA_` and `GEFORCE_`.
#[must_use]
pub fn extract_gpu_type(gpu_name: &str) -> String {
    let mut upper = String::with_capacity(gpu_name.len());
    push_upper(&mut upper, gpu_name);
    let upper: String = upper
        .chars()
        .map(|c| if c == ' ' || c == '-' { '_' } else { c })
        .collect();

    if upper.contains("SPARK") {
        return "SPARK".into();
    }
    for model in ["GB300", "GB200", "GB100", "GH200", "GH100"] {
        if upper.contains(model) {
            return model.into();
        }
    }
    for model in ["B300", "B200", "B100", "H200", "H100"] {
        if upper.contains(model) {
            return model.into();
        }
    }
    if upper.contains("RTX") {
        let parts: Vec<&str> = upper.split('_').collect();
        if let Some(i) = parts.iter().position(|p| *p == "RTX") {
            if let Some(model) = parts.get(i + 1) {
                let model = model.strip_suffix("TI").unwrap_or(model);
                let model = model.strip_suffix("ADA").unwrap_or(model);
                return format!("RTX{model}");
            }
        }
    }
    if upper.contains("JETSON") || upper.contains("THOR") || upper.contains("ORIN") {
        if let Some(part) = upper
            .split('_')
            .find(|p| p.starts_with('T') && p.chars().any(is_digit))
        {
            return part.into();
        }
        if upper.contains("THOR") {
            return "THOR".into();
        }
        if upper.contains("ORIN") {
            return "ORIN".into();
        }
    }
    for model in ["L40S", "L40", "L4"] {
        if upper.contains(model) {
            return model.into();
        }
    }
    if let Some(part) = upper.split('_').find(|p| {
        !PREFIXES_SKIPPED_FOR_MODEL.contains(p)
            && p.chars().any(is_digit)
            && p.chars().any(is_alpha)
    }) {
        return part.into();
    }
    if let Some(part) = upper
        .split('_')
        .find(|p| !p.is_empty() && !PREFIXES_SKIPPED_FOR_FALLBACK.contains(p))
    {
        return part.into();
    }
    upper.replace("NVIDIA_", "").replace("GEFORCE_", "")
}

/// The primary GPU type of a job: the first type in [`GPU_PRIORITY`] the job uses; if
/// none is listed, the most frequent type, and among equally frequent ones the one that
/// comes first in the job's list. `unknown` for an empty list.
#[must_use]
pub fn extract_primary_gpu<S: AsRef<str>>(gpus: &[S]) -> String {
    let mut types: Vec<(String, usize)> = Vec::new();
    let mut position: HashMap<String, usize, KeyHashState> = HashMap::default();
    for gpu in gpus {
        let t = extract_gpu_type(gpu.as_ref());
        match position.get(&t) {
            Some(&i) => types[i].1 += 1,
            None => {
                position.insert(t.clone(), types.len());
                types.push((t, 1));
            }
        }
    }
    choose_primary(types.iter().map(|(t, c)| (t, *c, priority_rank(t))))
        .map_or_else(|| "unknown".to_owned(), |t| t.clone())
}

fn priority_rank(gpu_type: &str) -> Option<usize> {
    GPU_PRIORITY.iter().position(|p| *p == gpu_type)
}

/// The primary of a job's GPU types, given as `(type, count, priority rank)` in order
/// of first appearance: the best-ranked type if any is ranked, otherwise the most
/// frequent, ties going to the earliest. `None` for no types.
fn choose_primary<T>(types: impl Iterator<Item = (T, usize, Option<usize>)> + Clone) -> Option<T> {
    let ranked = types
        .clone()
        .filter_map(|(t, _, rank)| rank.map(|r| (r, t)))
        .min_by_key(|(r, _)| *r);
    if let Some((_, t)) = ranked {
        return Some(t);
    }
    let mut best: Option<(T, usize)> = None;
    for (item, count, _) in types {
        let better = match &best {
            Some((_, c)) => count > *c,
            None => true,
        };
        if better {
            best = Some((item, count));
        }
    }
    best.map(|(item, _)| item)
}

/// Where a label's value comes from.
#[derive(Debug, Clone, Copy)]
enum LabelSource {
    Attribute(usize),
    Status,
    PrimaryGpu,
    GpuCount,
}

/// A GPU type seen by this builder.
#[derive(Debug)]
struct GpuType {
    name: String,
    rank: Option<usize>,
    /// `tao_job_gpu_total{tao_gpu_type="<name>"}`.
    total_key: String,
}

/// GPU name → type, remembered so each distinct name is analysed once.
#[derive(Debug, Default)]
struct GpuTypeCache {
    by_name: HashMap<String, u32, KeyHashState>,
    by_type: HashMap<String, u32, KeyHashState>,
    types: Vec<GpuType>,
}

impl GpuTypeCache {
    /// Names kept before the cache starts over (bounds memory for endless new names).
    const MAX_NAMES: usize = 4096;

    fn id(&mut self, gpu_name: &str) -> u32 {
        if let Some(&id) = self.by_name.get(gpu_name) {
            return id;
        }
        let name = extract_gpu_type(gpu_name);
        let id = match self.by_type.get(name.as_str()) {
            Some(&id) => id,
            None => {
                let id = self.types.len() as u32;
                let mut total_key = String::with_capacity(name.len() + 40);
                total_key.push_str(JOB_GPU_TOTAL);
                total_key.push_str("{tao_gpu_type=\"");
                escape_label_value_into(&mut total_key, &name);
                total_key.push_str("\"}");
                self.by_type.insert(name.clone(), id);
                self.types.push(GpuType {
                    rank: priority_rank(&name),
                    name,
                    total_key,
                });
                id
            }
        };
        self.by_name.insert(gpu_name.to_owned(), id);
        id
    }

    fn trim(&mut self) {
        if self.by_name.len() > Self::MAX_NAMES {
            self.by_name.clear();
            self.by_type.clear();
            self.types.clear();
        }
    }
}

/// Counts jobs, durations, GPU time and GPUs under Prometheus-style keys
/// `name{label="value",…}` with labels sorted by name:
///
/// * `tao_job_total{…}`: +1 per job;
/// * `tao_job_duration_sum{…}`: + `time_lapsed`, and `tao_job_gpu_time_sum{…}`:
///   + GPU count × `time_lapsed`, both only when `time_lapsed > 0`;
/// * `tao_job_gpu_total{tao_gpu_type="…"}`: + the number of GPUs of each type.
///
/// The labels are `tao_<name>` for every registry attribute except `success`,
/// `time_lapsed` and list attributes (strings as normalised, booleans rendered and
/// lower-cased, integers in decimal), plus `tao_status` (`pass`/`fail` from
/// `success`), `tao_primary_gpu` (see [`extract_primary_gpu`]; `unknown` for no GPU)
/// and `tao_gpu_count`. Label values are escaped as the Prometheus text format
/// requires. Uses `gpus` (empty if absent), `success` and `time_lapsed` if present.
#[derive(Debug)]
#[must_use]
pub struct LabeledMetricsBuilder {
    labels: Option<Vec<(String, LabelSource)>>,
    success: Option<usize>,
    gpus: Option<usize>,
    time_lapsed: Option<usize>,
    cache: GpuTypeCache,
    /// Per record class: the writes the rules below made for it.
    classes: ClassMemo,
    /// The attribute positions the keys depend on (0: none usable).
    mask: u64,
    writes: Vec<Write>,
    /// Per-type counts of the current job, in first-appearance order.
    counts: Vec<(u32, usize)>,
    /// By type id: its position in `counts` while a job is grouped, else `u32::MAX`.
    count_at: Vec<u32>,
    key: String,
    value: String,
}

impl Default for LabeledMetricsBuilder {
    fn default() -> Self {
        LabeledMetricsBuilder {
            labels: None,
            success: None,
            gpus: None,
            time_lapsed: None,
            cache: GpuTypeCache::default(),
            classes: ClassMemo::new(Self::MAX_LABEL_SETS),
            mask: 0,
            writes: Vec::new(),
            counts: Vec::new(),
            count_at: Vec::new(),
            key: String::new(),
            value: String::new(),
        }
    }
}

/// What one job's labels are made of.
struct JobLabels<'a, 'd> {
    labels: &'a [(String, LabelSource)],
    data: &'a TelemetryData<'d>,
    success: bool,
    primary: &'a str,
    gpu_count: usize,
}

impl JobLabels<'_, '_> {
    /// Appends `{label="value",…}`, values escaped.
    fn write_text(&self, out: &mut String, value: &mut String) {
        out.push('{');
        for (i, (prefix, source)) in self.labels.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(prefix);
            match source {
                LabelSource::Attribute(index) => match self.data.at(*index) {
                    // Sanitised text never needs escaping.
                    AttrValue::String(v) => out.push_str(v),
                    other => {
                        value.clear();
                        other.write_text(value);
                        escape_label_value_into(out, value);
                    }
                },
                LabelSource::Status => out.push_str(if self.success { "pass" } else { "fail" }),
                LabelSource::PrimaryGpu => escape_label_value_into(out, self.primary),
                LabelSource::GpuCount => push_uint(out, self.gpu_count as u64),
            }
            out.push('"');
        }
        out.push('}');
    }
}

impl LabeledMetricsBuilder {
    /// A new builder.
    pub fn new() -> LabeledMetricsBuilder {
        LabeledMetricsBuilder::default()
    }

    /// Record classes remembered before the memo starts over.
    const MAX_LABEL_SETS: usize = 1 << 16;
}

impl MetricBuilder for LabeledMetricsBuilder {
    fn name(&self) -> &str {
        "labeled"
    }

    fn bind(&mut self, registry: &AttributeRegistry) -> Result<(), BindError> {
        let name = "labeled";
        self.success = bind_attribute(registry, name, "success", AttributeType::Boolean, false)?;
        self.gpus = bind_attribute(registry, name, "gpus", AttributeType::List, false)?;
        self.time_lapsed =
            bind_attribute(registry, name, "time_lapsed", AttributeType::Integer, false)?;
        let mut labels = BTreeMap::new();
        for (i, attr) in registry.attributes().iter().enumerate() {
            if attr.name == "success"
                || attr.name == "time_lapsed"
                || attr.attr_type == AttributeType::List
            {
                continue;
            }
            labels.insert(format!("tao_{}", attr.name), LabelSource::Attribute(i));
        }
        self.mask = class_mask(
            labels
                .values()
                .filter_map(|source| match source {
                    LabelSource::Attribute(i) => Some(*i),
                    _ => None,
                })
                .chain(self.success)
                .chain(self.gpus),
        );
        labels.insert("tao_status".into(), LabelSource::Status);
        labels.insert("tao_primary_gpu".into(), LabelSource::PrimaryGpu);
        labels.insert("tao_gpu_count".into(), LabelSource::GpuCount);
        self.labels = Some(
            labels
                .into_iter()
                .map(|(name, source)| (format!("{name}=\""), source))
                .collect(),
        );
        Ok(())
    }

    fn build(
        &mut self,
        metrics: &mut MetricsUpdate<'_>,
        data: &TelemetryData<'_>,
        _context: &BuildContext,
    ) -> Result<(), BuildError> {
        let labels = self
            .labels
            .as_deref()
            .ok_or_else(|| BuildError::Custom("labeled builder used before bind".into()))?;
        let time_lapsed = integer_at(data, self.time_lapsed);
        // Seen this class before: the same writes, as long as they include those that
        // scale with time when this record's time is positive.
        let class = data.class(self.mask);
        if let Some(writes) = self.classes.get(metrics, class, time_lapsed) {
            return metrics.apply(writes, time_lapsed);
        }
        let gpus = match self.gpus.map(|i| data.at(i)) {
            Some(AttrValue::List(list)) => *list,
            _ => ListValue::Default(&[]),
        };
        let gpu_count = gpus.len();

        self.cache.trim();
        self.count_at.truncate(self.cache.types.len());
        self.counts.clear();
        let groups = match self.gpus.and_then(|i| data.groups_at(i)) {
            Some(groups) => groups,
            None => Cow::Owned(NameGroups::from_names([])),
        };
        // Counts by type id, in first-appearance order; `count_at[id]` is the type's
        // position in `counts` (u32::MAX: not yet), so the grouping stays linear.
        for (gpu, count) in groups.iter() {
            let id = self.cache.id(gpu) as usize;
            if self.count_at.len() <= id {
                self.count_at.resize(id + 1, u32::MAX);
            }
            match self.count_at[id] {
                u32::MAX => {
                    self.count_at[id] = self.counts.len() as u32;
                    self.counts.push((id as u32, count as usize));
                }
                at => self.counts[at as usize].1 += count as usize,
            }
        }
        for &(id, _) in &self.counts {
            self.count_at[id as usize] = u32::MAX;
        }
        let types = &self.cache.types;
        let primary: &str = if gpu_count == 0 {
            "unknown"
        } else {
            let id = choose_primary(
                self.counts
                    .iter()
                    .map(|&(id, count)| (id, count, types[id as usize].rank)),
            )
            .unwrap_or(0);
            &types[id as usize].name
        };
        let job = JobLabels {
            labels,
            data,
            success: truthy_at(data, self.success),
            primary,
            gpu_count,
        };
        let (key, value, writes) = (&mut self.key, &mut self.value, &mut self.writes);
        writes.clear();
        let mut family = |name: &str| -> Result<crate::metrics::Slot, BuildError> {
            key.clear();
            key.push_str(name);
            job.write_text(key, value);
            metrics.slot(key)
        };
        writes.push(Write::per_job(family(JOB_TOTAL)?, 1));
        if time_lapsed > 0 {
            let gpus = i64::try_from(gpu_count).unwrap_or(i64::MAX);
            writes.push(Write::per_time(family(JOB_DURATION_SUM)?, 1));
            writes.push(Write::per_time(family(JOB_GPU_TIME_SUM)?, gpus));
        }
        for &(id, count) in &self.counts {
            let total_key = &self.cache.types[id as usize].total_key;
            writes.push(Write::per_job(metrics.slot(total_key)?, count as i64));
        }
        metrics.apply(&self.writes, time_lapsed)?;
        self.classes
            .insert(metrics, class, &self.writes, time_lapsed > 0);
        Ok(())
    }

    fn metric_kind(&self, family: &str) -> Option<MetricKind> {
        [JOB_TOTAL, JOB_DURATION_SUM, JOB_GPU_TIME_SUM, JOB_GPU_TOTAL]
            .contains(&family)
            .then_some(MetricKind::Counter)
    }
}
