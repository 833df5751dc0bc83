//! The nixl-telemetry benchmark suite: our record paths next to their floors
//! and to what a Rust user would pick instead, the collector's pipeline
//! throughput, the flush path into the exporters and plug-ins, and the cost of
//! telemetry in a real transfer loop.
//!
//! Everything is measured in one process and compared as ratios of medians
//! from the same run: the machines this runs on are small and noisy.
//! `cargo run --release -p nixl-telemetry-bench -- [--quick] [--json]`.

pub mod callgrind;
pub mod exporters;
pub mod flag_values;
pub mod harness;
pub mod ops;
pub mod paired;
pub mod pipeline;
pub mod realloop;
pub mod report;

use anyhow::Result;
use serde_json::json;

pub use report::{Report, Row, Target, Unit};

/// How much the suite measures.
#[derive(Debug, Clone, Copy)]
pub struct SuitePlan {
    /// Per-operation benchmarks.
    pub ops: harness::Plan,
    /// Throughput benchmarks.
    pub pipe: pipeline::PipePlan,
    /// Timed flushes per exporter.
    pub flush_rounds: usize,
    /// The real transfer loop.
    pub real_loop: realloop::LoopPlan,
    /// Name of the mode, for the report.
    pub mode: &'static str,
}

impl SuitePlan {
    /// The `--quick` plan: under a minute in all.
    pub fn quick() -> SuitePlan {
        SuitePlan {
            ops: harness::Plan {
                repeats: 41,
                warmup: 3,
            },
            pipe: pipeline::PipePlan {
                ring_events: 2_000_000,
                repeats: 3,
                pipeline_time: std::time::Duration::from_millis(300),
            },
            flush_rounds: 41,
            real_loop: realloop::LoopPlan {
                rounds: 41,
                chunk: std::time::Duration::from_millis(2),
            },
            mode: "quick",
        }
    }

    /// The full plan.
    pub fn full() -> SuitePlan {
        SuitePlan {
            ops: harness::Plan {
                repeats: 401,
                warmup: 10,
            },
            pipe: pipeline::PipePlan {
                ring_events: 20_000_000,
                repeats: 7,
                pipeline_time: std::time::Duration::from_secs(2),
            },
            flush_rounds: 401,
            real_loop: realloop::LoopPlan {
                rounds: 401,
                chunk: std::time::Duration::from_millis(2),
            },
            mode: "full",
        }
    }
}

/// Parts of the suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// Per-operation costs on 1 and 2 threads.
    Ops,
    /// Ring alone.
    Ring,
    /// Whole pipeline.
    Pipeline,
    /// Flush path into each exporter.
    Exporters,
    /// The demo's transfer loop.
    Loop,
}

impl Part {
    /// Every part, in run order.
    pub const ALL: [Part; 5] = [
        Part::Ops,
        Part::Ring,
        Part::Pipeline,
        Part::Exporters,
        Part::Loop,
    ];

    /// Parses a part's name.
    pub fn parse(name: &str) -> Option<Part> {
        Some(match name {
            "ops" => Part::Ops,
            "ring" => Part::Ring,
            "pipeline" => Part::Pipeline,
            "exporters" => Part::Exporters,
            "loop" => Part::Loop,
            _ => return None,
        })
    }
}

/// Runs the selected parts of the suite.
pub fn run_suite(plan: SuitePlan, parts: &[Part]) -> Result<Report> {
    nixl_telemetry::clock::init();
    let mut report = Report::default();
    report.settings.insert("mode".into(), json!(plan.mode));
    report
        .settings
        .insert("ops_repeats".into(), json!(plan.ops.repeats));
    report
        .settings
        .insert("ops_per_repeat".into(), json!(ops::OPS));
    report
        .settings
        .insert("staging_events".into(), json!(ops::STAGING_EVENTS));
    report
        .settings
        .insert("tsc_clock".into(), json!(nixl_telemetry::clock::uses_tsc()));
    report.settings.insert(
        "available_parallelism".into(),
        json!(std::thread::available_parallelism().map_or(0, |n| n.get())),
    );
    for part in Part::ALL.iter().filter(|p| parts.contains(p)) {
        match part {
            Part::Ops => {
                ops::run(plan.ops, &mut report.rows)?;
                paired::run(plan.ops, &mut report.rows)?;
            }
            Part::Ring => {
                pipeline::ring_alone(plan.pipe, &mut report.rows)?;
                pipeline::ring_stages(plan.pipe, &mut report.rows)?;
            }
            Part::Pipeline => pipeline::whole_pipeline(plan.pipe, &mut report.rows)?,
            Part::Exporters => {
                exporters::run(plan.flush_rounds, &mut report.rows, &mut report.notes)?
            }
            Part::Loop => realloop::run(plan.real_loop, &mut report.rows, &mut report.notes)?,
        }
    }
    Ok(report)
}
