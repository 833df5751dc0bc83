//! `--summary`: per agent and event name, count, sum, min, max and, for
//! PERFORMANCE events, the nearest-rank p50/p90/p99.
//!
//! The table is the Python reader's, byte for byte: one block per agent in
//! sorted order (`Agent: <name>`, then a header and one row per category and
//! name, or `(no events)`), blocks separated by an empty line; names and
//! categories left-aligned, numbers right-aligned, columns two spaces apart,
//! widths counted in characters. Events of ring versions without categories
//! (3 and 4) have `-` in the CATEGORY column and sort before the others.

use std::collections::{BTreeSet, HashMap};

use nixl_telemetry_abi::Category;

const HEADER: [&str; 9] = [
    "CATEGORY", "EVENT", "COUNT", "SUM", "MIN", "MAX", "P50", "P90", "P99",
];

#[derive(Debug)]
struct Row {
    count: u64,
    sum: u128,
    min: u64,
    max: u64,
    values: Option<Vec<u64>>,
}

/// Running statistics keyed by (agent, category, name).
#[derive(Debug, Default)]
pub struct Summary {
    agents: Vec<String>,
    agent_ids: HashMap<String, u32>,
    /// The rows, in the order they were first seen.
    rows: Vec<Row>,
    /// (agent, category, name) → index in `rows`.
    index: HashMap<(u32, Option<i32>, u32), usize>,
    /// By name id: the row that name's latest event went to. Consecutive
    /// events of one name nearly always share agent and category, so most
    /// events find their row here without hashing.
    recent: Vec<Option<(u32, Option<i32>, usize)>>,
}

impl Summary {
    /// The id of an agent name (the same name always gets the same id).
    pub fn agent_id(&mut self, agent: &str) -> u32 {
        if let Some(&id) = self.agent_ids.get(agent) {
            return id;
        }
        let id = self.agents.len() as u32;
        self.agents.push(agent.to_owned());
        self.agent_ids.insert(agent.to_owned(), id);
        id
    }

    /// Counts one event.
    #[inline]
    pub fn add(&mut self, agent: u32, category: Option<i32>, name: u32, value: u64) {
        let slot = name as usize;
        let at = match self.recent.get(slot) {
            Some(&Some((a, c, at))) if a == agent && c == category => at,
            _ => {
                let rows = &mut self.rows;
                let at = *self
                    .index
                    .entry((agent, category, name))
                    .or_insert_with(|| {
                        rows.push(Row {
                            count: 0,
                            sum: 0,
                            min: value,
                            max: value,
                            values: (category == Some(Category::PERFORMANCE.0)).then(Vec::new),
                        });
                        rows.len() - 1
                    });
                if self.recent.len() <= slot {
                    self.recent.resize(slot + 1, None);
                }
                self.recent[slot] = Some((agent, category, at));
                at
            }
        };
        let row = &mut self.rows[at];
        row.count += 1;
        row.sum += u128::from(value);
        row.min = row.min.min(value);
        row.max = row.max.max(value);
        if let Some(values) = &mut row.values {
            values.push(value);
        }
    }

    /// The tables for every agent in `present` and every agent with events.
    /// `name_text` turns a name id back into its text as shown (control
    /// characters escaped); agents are escaped here.
    pub fn render<'a>(&'a self, present: &[String], name_text: impl Fn(u32) -> &'a str) -> String {
        let mut agents: BTreeSet<&str> = present.iter().map(String::as_str).collect();
        for &(agent, _, _) in self.index.keys() {
            agents.insert(&self.agents[agent as usize]);
        }
        let mut blocks = Vec::new();
        for agent in agents {
            let mut block = format!("Agent: {}\n", crate::printable::escape_control(agent));
            let id = self.agent_ids.get(agent).copied();
            let mut keys: Vec<(Option<i32>, &str, &Row)> = self
                .index
                .iter()
                .filter(|((a, _, _), _)| Some(*a) == id)
                .map(|(&(_, cat, name), &at)| (cat, name_text(name), &self.rows[at]))
                .collect();
            if keys.is_empty() {
                block.push_str("(no events)\n");
                blocks.push(block);
                continue;
            }
            keys.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
            let rows: Vec<[String; 9]> = keys
                .iter()
                .map(|&(cat, name, row)| {
                    let [p50, p90, p99] = match &row.values {
                        Some(values) => {
                            let mut sorted = values.clone();
                            sorted.sort_unstable();
                            [50, 90, 99].map(|p| nearest_rank(&sorted, p).to_string())
                        }
                        None => ["-", "-", "-"].map(str::to_owned),
                    };
                    [
                        cat.map_or_else(|| "-".to_owned(), |c| Category(c).to_string()),
                        name.to_owned(),
                        row.count.to_string(),
                        row.sum.to_string(),
                        row.min.to_string(),
                        row.max.to_string(),
                        p50,
                        p90,
                        p99,
                    ]
                })
                .collect();
            let width = |i: usize, cell: &str| cell.chars().count().max(HEADER[i].len());
            let widths: Vec<usize> = (0..9)
                .map(|i| rows.iter().map(|r| width(i, &r[i])).max().unwrap_or(0))
                .collect();
            let line = |cells: &[&str]| {
                let mut out = String::new();
                for (i, cell) in cells.iter().enumerate() {
                    if i > 0 {
                        out.push_str("  ");
                    }
                    let pad = widths[i].saturating_sub(cell.chars().count());
                    if i < 2 {
                        out.push_str(cell);
                        out.extend(std::iter::repeat_n(' ', pad));
                    } else {
                        out.extend(std::iter::repeat_n(' ', pad));
                        out.push_str(cell);
                    }
                }
                out.truncate(out.trim_end().len());
                out.push('\n');
                out
            };
            block.push_str(&line(&HEADER));
            for row in &rows {
                let cells: Vec<&str> = row.iter().map(String::as_str).collect();
                block.push_str(&line(&cells));
            }
            blocks.push(block);
        }
        blocks.join("\n")
    }
}

/// The nearest-rank percentile of sorted, non-empty `values`.
pub fn nearest_rank(sorted: &[u64], percent: u64) -> u64 {
    let n = sorted.len() as u64;
    let rank = ((percent * n).div_ceil(100)).max(1);
    sorted[(rank - 1) as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(nearest_rank(&v, 50), 50);
        assert_eq!(nearest_rank(&v, 99), 99);
        assert_eq!(nearest_rank(&[7], 50), 7);
        assert_eq!(nearest_rank(&[1, 2, 3], 50), 2);
        assert_eq!(nearest_rank(&[1, 2, 3], 90), 3);
    }

    #[test]
    fn rows_are_found_with_and_without_the_recent_cache() {
        let mut s = Summary::default();
        let (a, b) = (s.agent_id("a"), s.agent_id("b"));
        // Alternating agents and categories for one name: every add misses the cache.
        for i in 0..4 {
            s.add(a, Some(1), 0, i);
            s.add(b, Some(1), 0, 10 * i);
            s.add(a, None, 0, 100);
        }
        s.add(a, Some(1), 1, 7);
        let text = s.render(&[], |id| ["x", "y"][id as usize]);
        let want = "\
Agent: a
CATEGORY  EVENT  COUNT  SUM  MIN  MAX  P50  P90  P99
-         x          4  400  100  100    -    -    -
TRANSFER  x          4    6    0    3    -    -    -
TRANSFER  y          1    7    7    7    -    -    -

Agent: b
CATEGORY  EVENT  COUNT  SUM  MIN  MAX  P50  P90  P99
TRANSFER  x          4   60    0   30    -    -    -
";
        assert_eq!(text, want);
    }

    #[test]
    fn table_layout() {
        let mut s = Summary::default();
        let a = s.agent_id("initiator");
        let names = ["agent_xfer_time", "agent_tx_bytes"];
        s.add(a, Some(5), 0, 10);
        s.add(a, Some(5), 0, 30);
        s.add(a, Some(1), 1, 4096);
        let text = s.render(&["initiator".into(), "target".into()], |id| {
            names[id as usize]
        });
        let want = "\
Agent: initiator
CATEGORY     EVENT            COUNT   SUM   MIN   MAX  P50  P90  P99
TRANSFER     agent_tx_bytes       1  4096  4096  4096    -    -    -
PERFORMANCE  agent_xfer_time      2    40    10    30   10   30   30

Agent: target
(no events)
";
        assert_eq!(text, want);
    }
}
