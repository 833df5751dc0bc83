//! What the tests of `top --plain` share: running it, and reading the
//! tables it prints. A test that includes this module includes
//! `read_support` too.

#![allow(dead_code)]

use std::path::Path;
use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::read_support::{cli, follow, wait_until};

/// One printed table.
#[derive(Debug)]
pub struct Table {
    /// The interval measured, in seconds (from the title).
    pub interval: f64,
    /// Cells by agent (columns are two or more spaces apart).
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// The row of `agent`.
    pub fn row(&self, agent: &str) -> &[String] {
        self.rows
            .iter()
            .find(|r| r[0] == agent)
            .unwrap_or_else(|| panic!("no row for {agent} in {self:?}"))
    }

    /// The NOTE of `agent`'s row (empty when there is none).
    pub fn note(&self, agent: &str) -> &str {
        let row = self.row(agent);
        if row.len() > 11 {
            &row[11]
        } else {
            ""
        }
    }
}

/// The tables printed so far, whole: each but the last is followed by the
/// empty line printed before the next one, so the last (which may still be
/// coming) is left out.
pub fn tables(lines: &Mutex<Vec<String>>) -> Vec<Table> {
    let lines = lines.lock().unwrap().clone();
    let mut out = Vec::new();
    let blocks: Vec<&[String]> = lines.split(|l| l.is_empty()).collect();
    for block in &blocks[..blocks.len().saturating_sub(1)] {
        let Some(title) = block.first() else { continue };
        let interval = title
            .split("interval ")
            .nth(1)
            .and_then(|t| t.split(' ').next())
            .and_then(|t| t.parse().ok())
            .unwrap_or_else(|| panic!("no interval in {title:?}"));
        let rows = block[2..]
            .iter()
            .filter(|l| !l.starts_with("skipped "))
            .map(|l| {
                l.split("  ")
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .collect();
        out.push(Table { interval, rows });
    }
    out
}

/// `top --plain --interval 0.5 [extra] dir`, its stdout lines collected.
pub fn start(dir: &Path, extra: &[&str]) -> (Child, Arc<Mutex<Vec<String>>>) {
    let mut cmd = cli();
    cmd.args(["top", "--plain", "--interval", "0.5"])
        .args(extra)
        .arg(dir);
    follow(cmd)
}

/// Waits (20 s at most) for `n` whole tables.
pub fn wait_tables(lines: &Mutex<Vec<String>>, n: usize) {
    assert!(
        wait_until(Duration::from_secs(20), || tables(lines).len() >= n),
        "{} tables printed, waited for {n}: {:#?}",
        tables(lines).len(),
        lines.lock().unwrap()
    );
}

/// A cell as a number.
pub fn number(cell: &str) -> f64 {
    cell.parse()
        .unwrap_or_else(|_| panic!("{cell:?} is not a number"))
}
