//! The report as one self-contained HTML page: the summary table, the charts
//! as inline SVG, the model as JSON for tools, and a few lines of inline
//! script that sort the table. Nothing is fetched: it opens offline.

use std::fmt::Write as _;

use super::chart::Chart;
use super::model::{duration_words, AgentSummary, Axis, ReportModel};
use crate::units::{binary_bytes, si};

const STYLE: &str = "\
body{font-family:'DejaVu Sans',Verdana,sans-serif;margin:24px auto;max-width:1320px;padding:0 12px;color:#222}\
h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.2em;margin-top:1.6em}\
.meta{color:#555}code{background:#f3f3f3;padding:0 3px}\
.notes{background:#fff8e1;border-left:4px solid #f0b400;padding:8px 8px 8px 28px}\
table{border-collapse:collapse;font-size:.8em;width:100%}\
th,td{padding:4px 6px;border-bottom:1px solid #ddd;text-align:right;white-space:nowrap}\
th{white-space:normal;vertical-align:bottom}.table{overflow-x:auto}\
th:first-child,td:first-child{text-align:left}\
th{background:#f3f3f3;cursor:pointer;user-select:none}tfoot td{font-weight:bold}\
td.errors,th.errors{white-space:normal;text-align:left;min-width:13em}\
figure{margin:0 0 8px 0}figure svg{max-width:100%;height:auto;display:block}";

/// Sorts the summary table by the column clicked (again: the other way),
/// using each cell's `data-value`; marks the page ready for tests.
const SCRIPT: &str = r#"(function () {
  "use strict";
  var table = document.getElementById("summary");
  var body = table.tBodies[0];
  var heads = table.tHead.rows[0].cells;
  var order = {};
  function key(row, col) {
    var cell = row.cells[col];
    var v = cell.getAttribute("data-value");
    var n = parseFloat(v);
    return isNaN(n) ? (v === null ? cell.textContent : v) : n;
  }
  Array.prototype.forEach.call(heads, function (th, col) {
    th.title = "sort by this column";
    th.addEventListener("click", function () {
      var down = order[col] = !order[col];
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = key(a, col), y = key(b, col);
        var c = x < y ? -1 : x > y ? 1 : 0;
        return down ? -c : c;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
  document.documentElement.setAttribute("data-report-ready", "yes");
})();"#;

/// `text` escaped for HTML text and attribute values.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A cell: shown text, the value sorting uses, a tooltip with the exact value.
fn cell(out: &mut String, shown: &str, value: &str, title: Option<&str>) {
    let _ = write!(out, "<td data-value=\"{}\"", escape(value));
    if let Some(t) = title {
        let _ = write!(out, " title=\"{}\"", escape(t));
    }
    let _ = write!(out, ">{}</td>", escape(shown));
}

fn optional(out: &mut String, value: Option<u64>) {
    match value {
        Some(v) => cell(out, &v.to_string(), &v.to_string(), None),
        None => cell(out, "-", "-1", None),
    }
}

fn bytes_cell(out: &mut String, bytes: u128) {
    let exact = format!("{bytes} bytes");
    cell(
        out,
        &si(bytes as f64, "B"),
        &bytes.to_string(),
        Some(&exact),
    );
}

const COLUMNS: [&str; 16] = [
    "agent",
    "ring",
    "events",
    "span",
    "tx bytes",
    "rx bytes",
    "requests tx / rx",
    "mean throughput",
    "transfers",
    "p50 µs",
    "p90 µs",
    "p99 µs",
    "max µs",
    "errors",
    "memory registered",
    "events lost",
];

fn row(out: &mut String, s: &AgentSummary) {
    out.push_str("<tr>");
    cell(out, &s.agent, &s.agent, None);
    match s.ring_version {
        Some(v) => cell(out, &format!("v{v}"), &v.to_string(), None),
        None => cell(out, "-", "0", None),
    }
    cell(out, &s.events.to_string(), &s.events.to_string(), None);
    match s.span_us {
        Some(us) => cell(
            out,
            &format!("{:.3} s", us as f64 / 1e6),
            &us.to_string(),
            Some(&format!("{us} µs")),
        ),
        None => cell(out, "-", "-1", None),
    }
    bytes_cell(out, s.tx_bytes);
    bytes_cell(out, s.rx_bytes);
    let requests = s.tx_requests + s.rx_requests;
    cell(
        out,
        &format!("{} / {}", s.tx_requests, s.rx_requests),
        &requests.to_string(),
        None,
    );
    match s.throughput_bytes_per_s {
        Some(bps) => cell(out, &si(bps, "B/s"), &bps.to_string(), None),
        None => cell(out, "-", "-1", None),
    }
    let x = &s.xfer_time_us;
    cell(out, &x.count.to_string(), &x.count.to_string(), None);
    optional(out, x.p50);
    optional(out, x.p90);
    optional(out, x.p99);
    optional(out, x.max);
    let statuses: Vec<String> = s
        .errors_by_status
        .iter()
        .map(|(status, n)| format!("{status} {n}"))
        .collect();
    let errors = if statuses.is_empty() {
        s.errors.to_string()
    } else {
        format!("{} ({})", s.errors, statuses.join(", "))
    };
    let _ = write!(
        out,
        "<td class=\"errors\" data-value=\"{}\">{}</td>",
        s.errors,
        escape(&errors)
    );
    cell(
        out,
        &binary_bytes(s.memory_registered_bytes),
        &s.memory_registered_bytes.to_string(),
        Some(&format!("{} bytes", s.memory_registered_bytes)),
    );
    match s.events_lost {
        Some(n) => cell(out, &n.to_string(), &n.to_string(), None),
        None => cell(
            out,
            "unknown",
            "-1",
            Some("this NIXL ring version has no way to tell its losses"),
        ),
    }
    out.push_str("</tr>\n");
}

/// The model as JSON that is safe inside a `<script>` element.
fn embedded_json(model: &ReportModel) -> String {
    serde_json::to_string(model)
        .expect("the model serializes")
        .replace('<', "\\u003c")
}

/// The page: every chart of `model` drawn as inline SVG.
pub fn page(model: &ReportModel, generated: &str) -> Result<String, String> {
    let mut out = String::with_capacity(256 * 1024);
    let title = format!("NIXL telemetry report: {}", model.input);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>NIXL telemetry report</h1>\n",
        escape(&title)
    );
    let axis = match model.axis {
        Axis::Time {
            bin_us, span_us, ..
        } => format!(
            "{:.3} s from the first event to the last; charts in bins of {}",
            span_us as f64 / 1e6,
            duration_words(bin_us)
        ),
        Axis::ReadOrder { bin_events, .. } => {
            format!("charted by read order, in bins of {bin_events} events")
        }
    };
    let _ = writeln!(
        out,
        "<p class=\"meta\">Input: <code>{}</code> · {} agents · {} events · {} · generated {} by \
         <code>nixl-telemetry report</code></p>",
        escape(&model.input),
        model.agents.len(),
        model.total.events,
        escape(&axis),
        escape(generated)
    );
    if !model.notes.is_empty() {
        out.push_str("<ul class=\"notes\">\n");
        for note in &model.notes {
            let _ = writeln!(out, "<li>{}</li>", escape(note));
        }
        out.push_str("</ul>\n");
    }
    out.push_str("<h2>Summary</h2>\n<div class=\"table\"><table id=\"summary\">\n<thead><tr>");
    for c in COLUMNS {
        let class = if c == "errors" {
            " class=\"errors\""
        } else {
            ""
        };
        let _ = write!(out, "<th{class}>{}</th>", escape(c));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for s in &model.agents {
        row(&mut out, s);
    }
    out.push_str("</tbody>\n<tfoot>\n");
    row(&mut out, &model.total);
    out.push_str("</tfoot>\n</table></div>\n<h2>Charts</h2>\n");
    for chart in Chart::ALL {
        let id = chart.file_name().trim_end_matches(".png");
        let svg = chart.svg(model)?;
        let _ = writeln!(out, "<figure id=\"{id}\">{svg}</figure>");
    }
    let _ = writeln!(
        out,
        "<script type=\"application/json\" id=\"report-data\">{}</script>",
        embedded_json(model)
    );
    let _ = writeln!(out, "<script>{SCRIPT}</script>\n</body>\n</html>");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped() {
        assert_eq!(
            escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }
}
