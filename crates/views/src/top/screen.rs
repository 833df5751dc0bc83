//! The full-screen view (ratatui): the agents' table, the selected agent's
//! details and throughput sparkline, the keys, and `?` for help.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Block, Borders, Cell, Clear, Paragraph, Row as TableRow, Sparkline, Table, TableState, Wrap,
};
use ratatui::Frame;

use super::row::{Row, SortKey};
use crate::units::{binary_bytes, si};

/// What a key asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Leave.
    Quit,
    /// Draw again.
    Redraw,
    /// Nothing to do.
    Nothing,
}

/// The keys, for the help.
const HELP: [(&str, &str); 7] = [
    ("q, Esc", "quit"),
    ("↑ ↓, k j", "select an agent"),
    ("Home End", "first, last agent"),
    ("s", "sort by the next column"),
    ("r", "reverse the order"),
    ("p, space", "pause (the rings are still read) / resume"),
    ("?", "this help (any key closes it)"),
];

/// What the help says beside the keys.
const LEGEND: [&str; 4] = [
    "Rates are per second over the last refresh interval.",
    "?  not known: events were missed (the NOTE says why)",
    "*  events/s the producer wrote (its ring's trailer)",
    "Gone agents (their ring file was removed) are grey.",
];

/// The view's state between refreshes.
pub struct Screen {
    /// What is being read, for the title.
    source: String,
    /// Seconds between refreshes.
    interval: f64,
    consuming: bool,
    sort: SortKey,
    reverse: bool,
    /// The selected agent, by its path (it keeps the selection across re-sorts).
    selected: Option<String>,
    paused: bool,
    help: bool,
    rows: Vec<Row>,
    skipped: usize,
    /// The local time of the rows shown.
    at: String,
    /// Seconds of history the sparkline covers.
    history_seconds: f64,
}

impl Screen {
    /// A view of `source`, refreshed every `interval` seconds.
    pub fn new(source: String, interval: f64, consuming: bool, history_seconds: f64) -> Screen {
        Screen {
            source,
            interval,
            consuming,
            sort: SortKey::Agent,
            reverse: false,
            selected: None,
            paused: false,
            help: false,
            rows: Vec::new(),
            skipped: 0,
            at: String::new(),
            history_seconds,
        }
    }

    /// Shows `rows` (read at local time `at`), unless paused.
    pub fn update(&mut self, rows: Vec<Row>, skipped: usize, at: String) {
        if self.paused {
            return;
        }
        self.rows = rows;
        self.skipped = skipped;
        self.at = at;
        self.sort_rows();
    }

    fn sort_rows(&mut self) {
        let (key, reverse) = (self.sort, self.reverse);
        self.rows.sort_by(|a, b| key.compare(a, b, reverse));
        let selected_there = self
            .selected
            .as_ref()
            .is_some_and(|p| self.rows.iter().any(|r| &r.path == p));
        if !selected_there {
            self.selected = self.rows.first().map(|r| r.path.clone());
        }
    }

    fn selected_index(&self) -> Option<usize> {
        let path = self.selected.as_ref()?;
        self.rows.iter().position(|r| &r.path == path)
    }

    fn select(&mut self, index: usize) {
        if let Some(row) = self.rows.get(index) {
            self.selected = Some(row.path.clone());
        }
    }

    /// Handles a key.
    pub fn key(&mut self, key: KeyEvent) -> Action {
        if key.kind != KeyEventKind::Press {
            return Action::Nothing;
        }
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            return Action::Quit;
        }
        if self.help {
            self.help = false;
            return if matches!(key.code, KeyCode::Char('q')) {
                Action::Quit
            } else {
                Action::Redraw
            };
        }
        let at = self.selected_index().unwrap_or(0);
        let last = self.rows.len().saturating_sub(1);
        match key.code {
            KeyCode::Char('q') | KeyCode::Esc => return Action::Quit,
            KeyCode::Up | KeyCode::Char('k') => self.select(at.saturating_sub(1)),
            KeyCode::Down | KeyCode::Char('j') => self.select((at + 1).min(last)),
            KeyCode::Home | KeyCode::Char('g') => self.select(0),
            KeyCode::End | KeyCode::Char('G') => self.select(last),
            KeyCode::Char('s') => {
                self.sort = self.sort.next();
                self.reverse = false;
                self.sort_rows();
            }
            KeyCode::Char('r') => {
                self.reverse = !self.reverse;
                self.sort_rows();
            }
            KeyCode::Char('p') | KeyCode::Char(' ') => self.paused = !self.paused,
            KeyCode::Char('?') | KeyCode::Char('h') => self.help = true,
            _ => return Action::Nothing,
        }
        Action::Redraw
    }

    /// Draws the whole screen.
    pub fn draw(&self, frame: &mut Frame) {
        let [title, table, detail, footer] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Min(4),
            Constraint::Length(9),
            Constraint::Length(1),
        ])
        .areas(frame.area());
        frame.render_widget(Paragraph::new(self.title_line()), title);
        self.draw_table(frame, table);
        self.draw_detail(frame, detail);
        frame.render_widget(Paragraph::new(self.footer_line()), footer);
        if self.help {
            self.draw_help(frame);
        }
    }

    fn title_line(&self) -> Line<'_> {
        let gone = self.rows.iter().filter(|r| r.gone).count();
        let mut spans = vec![
            Span::styled(
                "nixl-telemetry top",
                Style::new().add_modifier(Modifier::BOLD),
            ),
            Span::raw(format!("  {}  ", self.source)),
            Span::raw(format!("{} agents", self.rows.len())),
        ];
        if gone > 0 {
            spans.push(Span::raw(format!(" ({gone} gone)")));
        }
        spans.push(Span::raw(format!(
            "  {}  every {} s  {}",
            if self.consuming {
                "consuming"
            } else {
                "peeking"
            },
            trim_float(self.interval),
            self.at
        )));
        if self.skipped > 0 {
            spans.push(Span::styled(
                format!("  {} files skipped", self.skipped),
                Style::new().fg(Color::Yellow),
            ));
        }
        if self.paused {
            spans.push(Span::styled(
                "  PAUSED",
                Style::new()
                    .fg(Color::Black)
                    .bg(Color::Yellow)
                    .add_modifier(Modifier::BOLD),
            ));
        }
        Line::from(spans)
    }

    fn footer_line(&self) -> Line<'_> {
        let key = |k: &'static str| Span::styled(k, Style::new().add_modifier(Modifier::REVERSED));
        Line::from(vec![
            key("q"),
            Span::raw(" quit  "),
            key("↑↓"),
            Span::raw(" select  "),
            key("s"),
            Span::raw(format!(" sort ({})  ", self.sort.label())),
            key("r"),
            Span::raw(" reverse  "),
            key("p"),
            Span::raw(if self.paused { " resume  " } else { " pause  " }),
            key("?"),
            Span::raw(" help"),
        ])
    }

    fn draw_table(&self, frame: &mut Frame, area: Rect) {
        let header_cells: Vec<Cell> = [
            SortKey::Agent.label(),
            SortKey::Events.label(),
            SortKey::Tx.label(),
            SortKey::Rx.label(),
            SortKey::Requests.label(),
            "P50 µs",
            SortKey::P99.label(),
            SortKey::Errors.label(),
            "MEM REG",
            SortKey::Lost.label(),
            "NOTE",
        ]
        .iter()
        .map(|&label| {
            if label == self.sort.label() {
                let arrow = if self.reverse { "▲" } else { "▼" };
                Cell::from(format!("{label}{arrow}"))
                    .style(Style::new().add_modifier(Modifier::UNDERLINED))
            } else {
                Cell::from(label)
            }
        })
        .collect();
        let header = TableRow::new(header_cells).style(Style::new().add_modifier(Modifier::BOLD));
        let rows: Vec<TableRow> = self.rows.iter().map(|r| self.table_row(r)).collect();
        let widths = [
            Constraint::Min(10),
            Constraint::Length(9),
            Constraint::Length(10),
            Constraint::Length(10),
            Constraint::Length(8),
            Constraint::Length(7),
            Constraint::Length(7),
            Constraint::Length(7),
            Constraint::Length(9),
            Constraint::Length(6),
            Constraint::Fill(2),
        ];
        let table = Table::new(rows, widths)
            .header(header)
            .row_highlight_style(
                Style::new()
                    .bg(Color::Indexed(238))
                    .add_modifier(Modifier::BOLD),
            )
            .block(Block::new().borders(Borders::TOP | Borders::BOTTOM));
        let mut state = TableState::default().with_selected(self.selected_index());
        frame.render_stateful_widget(table, area, &mut state);
    }

    fn table_row(&self, r: &Row) -> TableRow<'_> {
        let unknown = || Cell::from("?").style(Style::new().fg(Color::Yellow));
        let rate = |v: Option<f64>, unit: &str| v.map_or_else(unknown, |v| Cell::from(si(v, unit)));
        let rates = r.rates.as_ref();
        let percentile = |p: Option<Option<f64>>| match p {
            None => unknown(),
            Some(None) => Cell::from("-"),
            Some(Some(us)) => Cell::from(format!("{us:.0}")),
        };
        let events = match (rates, r.written_per_s) {
            (Some(rt), _) => Cell::from(si(rt.events_per_s, "")),
            // The producer's own count (trailer), when the events read are not all.
            (None, Some(w)) if !r.gone => Cell::from(format!("{}*", si(w, ""))),
            _ => unknown(),
        };
        let mut note = r.flags.note(self.consuming);
        if r.gone && r.flags.problem.is_none() {
            note = if note.is_empty() {
                "gone".to_owned()
            } else {
                format!("gone; {note}")
            };
        }
        if let (None, Some(_), false) = (rates, r.written_per_s, r.gone) {
            note.push_str(if note.is_empty() {
                "* written by the producer"
            } else {
                "; * written by the producer"
            });
        }
        let cells = vec![
            Cell::from(r.agent.clone()),
            events,
            rate(rates.map(|x| x.tx_bytes_per_s), "B/s"),
            rate(rates.map(|x| x.rx_bytes_per_s), "B/s"),
            rate(rates.map(|x| x.requests_per_s), ""),
            percentile(rates.map(|x| x.p50_us)),
            percentile(rates.map(|x| x.p99_us)),
            Cell::from(r.errors.to_string()).style(if r.errors > 0 {
                Style::new().fg(Color::Red)
            } else {
                Style::new()
            }),
            Cell::from(binary_bytes(r.memory_registered)),
            Cell::from(r.lost.map_or_else(|| "-".to_owned(), |n| n.to_string())),
            Cell::from(note).style(Style::new().fg(Color::Yellow)),
        ];
        let style = if r.gone {
            Style::new().fg(Color::DarkGray)
        } else {
            Style::new()
        };
        TableRow::new(cells).style(style)
    }

    fn draw_detail(&self, frame: &mut Frame, area: Rect) {
        let Some(row) = self.selected_index().and_then(|i| self.rows.get(i)) else {
            let text = Paragraph::new("No ring yet: waiting for ring files to appear.")
                .block(Block::bordered().title(" agent "));
            frame.render_widget(text, area);
            return;
        };
        let [left, right] =
            Layout::horizontal([Constraint::Percentage(45), Constraint::Percentage(55)])
                .areas(area);
        let version = row
            .version
            .map_or_else(String::new, |v| format!(", ring version {v}"));
        let mut lines = vec![Line::from(format!("{}{version}", row.path))];
        let errors = if row.errors_by_status.is_empty() {
            "none".to_owned()
        } else {
            row.errors_by_status
                .iter()
                .map(|(s, n)| format!("{s} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        lines.push(Line::from(format!("errors by status: {errors}")));
        lines.push(Line::from(format!(
            "memory registered now: {}",
            binary_bytes(row.memory_registered)
        )));
        lines.push(Line::from(format!(
            "events lost by the producer: {}",
            row.lost.map_or_else(
                || "unknown (this ring version cannot tell)".to_owned(),
                |n| n.to_string()
            )
        )));
        let note = row.flags.note(self.consuming);
        if !note.is_empty() {
            lines.push(Line::styled(note, Style::new().fg(Color::Yellow)));
        }
        let details = Paragraph::new(lines)
            .wrap(Wrap { trim: true })
            .block(Block::bordered().title(format!(" {} ", row.agent)));
        frame.render_widget(details, left);

        let now = row.history.last().copied().flatten();
        let max = row.history.iter().flatten().max().copied().unwrap_or(0);
        let title = format!(
            " throughput, last {} s: now {}, max {} ",
            trim_float(self.history_seconds),
            now.map_or_else(|| "?".to_owned(), |v| si(v as f64, "B/s")),
            si(max as f64, "B/s")
        );
        // The newest value at the right edge.
        let inner = right.width.saturating_sub(2) as usize;
        let skip = row.history.len().saturating_sub(inner);
        let sparkline = Sparkline::default()
            .block(Block::bordered().title(title))
            .data(row.history[skip..].iter().copied())
            .absent_value_symbol("·")
            .absent_value_style(Style::new().fg(Color::DarkGray))
            .style(Style::new().fg(Color::Cyan));
        frame.render_widget(sparkline, right);
    }

    fn draw_help(&self, frame: &mut Frame) {
        let area = frame.area();
        let width = 66.min(area.width);
        let height = ((HELP.len() + LEGEND.len()) as u16 + 3).min(area.height);
        let popup = Rect::new(
            area.x + (area.width - width) / 2,
            area.y + (area.height - height) / 2,
            width,
            height,
        );
        let mut lines: Vec<Line> = HELP
            .iter()
            .map(|(k, what)| {
                Line::from(vec![
                    Span::styled(
                        format!("{k:>10}  "),
                        Style::new().add_modifier(Modifier::BOLD),
                    ),
                    Span::raw(*what),
                ])
            })
            .collect();
        lines.push(Line::from(""));
        lines.extend(LEGEND.iter().map(|text| Line::from(format!(" {text}"))));
        frame.render_widget(Clear, popup);
        frame.render_widget(
            Paragraph::new(lines).block(Block::bordered().title(" help: keys ")),
            popup,
        );
    }
}

/// `1` for 1.0, `0.5` for 0.5.
fn trim_float(v: f64) -> String {
    let text = format!("{v:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}
