//! Draws the cost curves of `export_bench curve` and `service_curve` as SVG
//! (docs/PERFORMANCE.md shows them).
//!
//! ```text
//! target/release/curves_plot --export export-curve.json --service service-curve.json --out docs/img [--png]
//! ```
//!
//! `--png` also writes each chart as PNG beside its SVG.
//!
//! Each point is the median of the rounds, its bar the rounds' min to max;
//! the x axes are logarithmic.

use std::path::PathBuf;

use anyhow::{bail, Context};
use plotters::prelude::*;
use plotters::style::FontStyle;
use serde_json::Value;

const WIDTH: u32 = 760;
const HEIGHT: u32 = 440;
const FONT: &str = "sans-serif";

/// One line of a chart: its name, colour, whether it is a floor (drawn
/// thin), and its points (x, median, min, max).
struct Line {
    name: String,
    color: RGBColor,
    floor: bool,
    points: Vec<(f64, f64, f64, f64)>,
}

struct Chart<'a> {
    title: &'a str,
    x_label: &'a str,
    y_label: &'a str,
    x_max: f64,
    y_log: bool,
    lines: Vec<Line>,
}

/// Writes `chart` as SVG to `path`, and as PNG beside it when `png`.
fn draw(chart: &Chart, path: &std::path::Path, png: bool) -> anyhow::Result<()> {
    let mut svg = String::new();
    draw_on(
        chart,
        SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area(),
    )?;
    std::fs::write(path, svg).with_context(|| format!("writing {}", path.display()))?;
    if png {
        let png_path = path.with_extension("png");
        draw_on(
            chart,
            BitMapBackend::new(&png_path, (WIDTH, HEIGHT)).into_drawing_area(),
        )
        .with_context(|| format!("writing {}", png_path.display()))?;
    }
    Ok(())
}

fn draw_on<DB: DrawingBackend>(
    chart: &Chart,
    area: DrawingArea<DB, plotters::coord::Shift>,
) -> anyhow::Result<()> {
    {
        area.fill(&WHITE).map_err(|e| anyhow::anyhow!("{e}"))?;
        let all: Vec<f64> = chart
            .lines
            .iter()
            .flat_map(|l| l.points.iter().flat_map(|p| [p.2, p.3]))
            .filter(|v| v.is_finite() && *v > 0.0)
            .collect();
        if all.is_empty() {
            bail!("{}: no point to draw", chart.title);
        }
        let y_min = all.iter().copied().fold(f64::INFINITY, f64::min);
        let y_max = all.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let x_range = (0.8f64..chart.x_max * 1.25).log_scale();
        let mut builder = ChartBuilder::on(&area);
        builder
            .caption(chart.title, (FONT, 20))
            .margin(12)
            .x_label_area_size(42)
            .y_label_area_size(70);
        let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("{e}");
        macro_rules! plot {
            ($ctx:expr) => {{
                let mut ctx = $ctx;
                ctx.configure_mesh()
                    .x_desc(chart.x_label)
                    .y_desc(chart.y_label)
                    .label_style((FONT, 13))
                    .x_label_formatter(&|x| format!("{x:.0}"))
                    .y_label_formatter(&|y| {
                        if *y >= 100.0 {
                            format!("{y:.0}")
                        } else if *y >= 1.0 {
                            format!("{y:.1}")
                        } else {
                            format!("{y:.3}")
                        }
                    })
                    .draw()
                    .map_err(err)?;
                for line in &chart.lines {
                    let style = if line.floor {
                        line.color.stroke_width(1)
                    } else {
                        line.color.stroke_width(3)
                    };
                    ctx.draw_series(LineSeries::new(
                        line.points.iter().map(|p| (p.0, p.1)),
                        style,
                    ))
                    .map_err(err)?
                    .label(line.name.as_str())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
                    ctx.draw_series(line.points.iter().map(|p| {
                        PathElement::new(vec![(p.0, p.2), (p.0, p.3)], line.color.stroke_width(1))
                    }))
                    .map_err(err)?;
                    ctx.draw_series(line.points.iter().map(|p| {
                        Circle::new(
                            (p.0, p.1),
                            if line.floor { 2 } else { 4 },
                            line.color.filled(),
                        )
                    }))
                    .map_err(err)?;
                }
                ctx.configure_series_labels()
                    .background_style(WHITE.mix(0.85))
                    .border_style(BLACK)
                    .label_font((FONT, 13))
                    .position(SeriesLabelPosition::UpperLeft)
                    .draw()
                    .map_err(err)?;
            }};
        }
        if chart.y_log {
            plot!(builder
                .build_cartesian_2d(x_range, (y_min * 0.7..y_max * 40.0).log_scale())
                .map_err(err)?);
        } else {
            plot!(builder
                .build_cartesian_2d(x_range, 0.0..y_max * 1.15)
                .map_err(err)?);
        }
        area.present().map_err(err)?;
    }
    Ok(())
}

fn stats(v: &Value) -> anyhow::Result<(f64, f64, f64)> {
    let get = |k: &str| v[k].as_f64().with_context(|| format!("{k} in {v}"));
    Ok((get("median")?, get("min")?, get("max")?))
}

fn export_chart(json: &Value) -> anyhow::Result<Chart<'static>> {
    let curve = json["curve"].as_array().context("export: no curve")?;
    let mut lines = Vec::new();
    for (key, name, color, floor) in [
        (
            "prometheus",
            "sidecar into the Prometheus plug-in",
            RGBColor(31, 119, 180),
            false,
        ),
        (
            "nop",
            "sidecar into nop (reading alone)",
            RGBColor(255, 127, 14),
            false,
        ),
        (
            "floor",
            "floor: the reader on the same schedule",
            RGBColor(90, 90, 90),
            true,
        ),
    ] {
        let mut points = Vec::new();
        for row in curve {
            let rings = row["rings"].as_f64().context("rings")?;
            let (m, lo, hi) = stats(&row[key])?;
            points.push((rings, m, lo, hi));
        }
        lines.push(Line {
            name: name.to_owned(),
            color,
            floor,
            points,
        });
    }
    let x_max = lines[0].points.iter().map(|p| p.0).fold(1.0, f64::max);
    Ok(Chart {
        title: "Sidecar CPU per event as rings grow (fixed total rate)",
        x_label: "rings (log scale)",
        y_label: "CPU s per million events",
        x_max,
        y_log: false,
        lines,
    })
}

fn service_chart(json: &Value) -> anyhow::Result<Chart<'static>> {
    let curve = json["curve"].as_array().context("service: no curve")?;
    let colors = [
        ("sqlite", "SQLite (WAL, normal)", RGBColor(44, 160, 44)),
        (
            "postgres-off",
            "PostgreSQL, synchronous_commit=off",
            RGBColor(31, 119, 180),
        ),
        (
            "postgres-on",
            "PostgreSQL, synchronous_commit=on",
            RGBColor(214, 39, 40),
        ),
    ];
    let mut lines = Vec::new();
    for (store, name, color) in colors {
        let rows: Vec<&Value> = curve.iter().filter(|r| r["store"] == store).collect();
        if rows.is_empty() {
            continue;
        }
        for (key, floor) in [("service", false), ("floor", true)] {
            let mut points = Vec::new();
            for row in &rows {
                let clients = row["clients"].as_f64().context("clients")?;
                let (m, lo, hi) = stats(&row[key])?;
                points.push((clients, m, lo, hi));
            }
            lines.push(Line {
                name: if floor {
                    format!("{name}: floor")
                } else {
                    format!("{name}: service")
                },
                color,
                floor,
                points,
            });
        }
    }
    if lines.is_empty() {
        bail!("service: no store in the curve");
    }
    let x_max = lines[0].points.iter().map(|p| p.0).fold(1.0, f64::max);
    Ok(Chart {
        title: "Service records/s as clients grow, beside one-commit-per-record floors",
        x_label: "concurrent clients (log scale)",
        y_label: "records/s (log scale)",
        x_max,
        y_log: true,
        lines,
    })
}

fn main() -> anyhow::Result<()> {
    let mut export = None;
    let mut service = None;
    let mut out = PathBuf::from(".");
    let mut png = false;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--png" {
            png = true;
            continue;
        }
        let value = args
            .next()
            .with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--export" => export = Some(PathBuf::from(value)),
            "--service" => service = Some(PathBuf::from(value)),
            "--out" => out = PathBuf::from(value),
            _ => bail!(
                "unknown option {flag}; accepted: --export FILE, --service FILE, --out DIR, --png"
            ),
        }
    }
    let _ = plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular());
    let read = |path: &PathBuf| -> anyhow::Result<Value> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
    };
    if export.is_none() && service.is_none() {
        bail!("nothing to draw: give --export FILE and/or --service FILE");
    }
    std::fs::create_dir_all(&out)?;
    if let Some(path) = &export {
        let target = out.join("export-curve.svg");
        draw(&export_chart(&read(path)?)?, &target, png)?;
        println!("{}", target.display());
    }
    if let Some(path) = &service {
        let target = out.join("service-curve.svg");
        draw(&service_chart(&read(path)?)?, &target, png)?;
        println!("{}", target.display());
    }
    Ok(())
}
