//! The report's charts, drawn from its model with plotters on any backend:
//! SVG for the HTML page, PNG for `--png`. One drawing, two outputs.

use std::path::Path;
use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::FontStyle;

use super::model::{Distribution, ReportModel, Series};
use crate::units::si;

/// The width of every chart, pixels.
pub const WIDTH: u32 = 1000;
/// The height of every chart, pixels.
pub const HEIGHT: u32 = 420;

/// The font every text is set in (registered once, from the embedded DejaVu
/// Sans, so no system font is needed).
const FONT: &str = "sans-serif";

/// Colours of the lines, in order (ColorBrewer's Set1, readable on white).
const COLOURS: [RGBColor; 9] = [
    RGBColor(55, 126, 184),
    RGBColor(228, 26, 28),
    RGBColor(77, 175, 74),
    RGBColor(152, 78, 163),
    RGBColor(255, 127, 0),
    RGBColor(166, 86, 40),
    RGBColor(247, 129, 191),
    RGBColor(153, 153, 153),
    RGBColor(200, 180, 0),
];

/// The percentile markers' colours: p50, p90, p99.
const MARKERS: [RGBColor; 3] = [
    RGBColor(77, 175, 74),
    RGBColor(255, 127, 0),
    RGBColor(228, 26, 28),
];

/// One of the report's charts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chart {
    /// Bytes moved per agent over time.
    Throughput,
    /// The transfer-time histogram with p50, p90, p99.
    TransferTime,
    /// Error events per status over time.
    Errors,
}

impl Chart {
    /// Every chart, in the page's order.
    pub const ALL: [Chart; 3] = [Chart::Throughput, Chart::TransferTime, Chart::Errors];

    /// The chart's file name under `--png`.
    pub fn file_name(self) -> &'static str {
        match self {
            Chart::Throughput => "throughput.png",
            Chart::TransferTime => "transfer-time.png",
            Chart::Errors => "errors.png",
        }
    }

    /// The chart's title.
    pub fn title(self) -> &'static str {
        match self {
            Chart::Throughput => "Throughput per agent",
            Chart::TransferTime => "Transfer time (agent_xfer_time)",
            Chart::Errors => "Errors by status",
        }
    }

    /// Draws the chart of `model` on `area`.
    pub fn draw<DB: DrawingBackend>(
        self,
        model: &ReportModel,
        area: &DrawingArea<DB, Shift>,
    ) -> Result<(), String> {
        register_font();
        area.fill(&WHITE).map_err(|e| e.to_string())?;
        match self {
            Chart::Throughput => LineChart {
                title: self.title(),
                x_end: model.axis.extent(),
                x_label: model.axis.label(),
                y_label: &model.axis.throughput_label(),
                y_unit: "B/s",
                empty: "no agent_tx_bytes or agent_rx_bytes events",
            }
            .draw(area, &model.throughput),
            Chart::TransferTime => draw_distribution(area, self.title(), &model.xfer),
            Chart::Errors => LineChart {
                title: self.title(),
                x_end: model.axis.extent(),
                x_label: model.axis.label(),
                y_label: &model.axis.errors_label(),
                y_unit: "",
                empty: "no error events",
            }
            .draw(area, &model.errors),
        }
        .map_err(|e| e.to_string())?;
        area.present().map_err(|e| e.to_string())
    }

    /// The chart as an SVG document.
    pub fn svg(self, model: &ReportModel) -> Result<String, String> {
        let mut out = String::new();
        {
            let area = SVGBackend::with_string(&mut out, (WIDTH, HEIGHT)).into_drawing_area();
            self.draw(model, &area)?;
        }
        Ok(out)
    }

    /// Writes the chart as a PNG image of [`WIDTH`] × [`HEIGHT`] pixels.
    pub fn png(self, model: &ReportModel, path: &Path) -> Result<(), String> {
        let area = BitMapBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area();
        self.draw(model, &area)
            .map_err(|e| format!("{}: {e}", path.display()))
    }
}

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The font is a valid TrueType file: registering cannot fail.
        let _ = plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular());
    });
}

/// A time in µs as people read it: `250 µs`, `2.5 ms`, `1 s`.
fn micros(us: f64) -> String {
    let (value, unit) = if us >= 1e6 {
        (us / 1e6, "s")
    } else if us >= 1e3 {
        (us / 1e3, "ms")
    } else {
        (us, "µs")
    };
    let text = format!("{value:.2}");
    format!(
        "{} {unit}",
        text.trim_end_matches('0').trim_end_matches('.')
    )
}

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// A chart of lines over the report's x axis.
struct LineChart<'a> {
    title: &'a str,
    /// Where the x axis ends.
    x_end: f64,
    x_label: &'a str,
    y_label: &'a str,
    /// The unit of the y axis' labels.
    y_unit: &'static str,
    /// What an empty chart says.
    empty: &'a str,
}

impl LineChart<'_> {
    /// A line per series.
    fn draw<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        series: &[Series],
    ) -> DrawResult<DB> {
        let LineChart {
            title,
            x_end,
            x_label,
            y_label,
            y_unit,
            empty,
        } = *self;
        let y_max = series.iter().map(Series::max_y).fold(0.0, f64::max);
        let y_end = if y_max > 0.0 { y_max * 1.1 } else { 1.0 };
        let mut chart = ChartBuilder::on(area)
            .caption(title, (FONT, 20))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(84)
            .build_cartesian_2d(0f64..x_end, 0f64..y_end)?;
        chart
            .configure_mesh()
            .x_desc(x_label)
            .y_desc(y_label)
            .axis_desc_style((FONT, 14))
            .label_style((FONT, 12))
            .y_label_formatter(&|v| si(*v, y_unit))
            .x_label_formatter(&|v| si(*v, ""))
            .light_line_style(RGBColor(244, 244, 244))
            .max_light_lines(2)
            .draw()?;
        if series.is_empty() {
            let style = TextStyle::from((FONT, 16).into_font()).color(&RGBColor(120, 120, 120));
            chart.draw_series(std::iter::once(Text::new(
                empty.to_owned(),
                (x_end * 0.4, y_end * 0.5),
                style,
            )))?;
            return Ok(());
        }
        for (i, s) in series.iter().enumerate() {
            let colour = COLOURS[i % COLOURS.len()];
            chart
                .draw_series(LineSeries::new(
                    s.points.iter().copied(),
                    colour.stroke_width(2),
                ))?
                .label(s.label.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], colour.stroke_width(3))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .label_font((FONT, 13))
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(180, 180, 180))
            .draw()?;
        Ok(())
    }
}

/// The histogram on a logarithmic time axis, with p50, p90, p99 marked.
fn draw_distribution<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    xfer: &Distribution,
) -> DrawResult<DB> {
    // Zero has no place on a log axis: its bin is drawn from 0.5 µs.
    let shown = |v: u64| if v == 0 { 0.5 } else { v as f64 };
    let (x_start, x_end) = match (xfer.bins.first(), xfer.bins.last()) {
        (Some(first), Some(last)) => (shown(first.low), shown(last.high)),
        _ => (1.0, 1000.0),
    };
    let y_max = xfer.bins.iter().map(|b| b.count).max().unwrap_or(0);
    let y_end = (y_max as f64 * 1.18).max(1.0);
    let mut chart = ChartBuilder::on(area)
        .caption(title, (FONT, 20))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(84)
        .build_cartesian_2d((x_start..x_end).log_scale(), 0f64..y_end)?;
    chart
        .configure_mesh()
        .x_desc("transfer time (logarithmic)")
        .y_desc("transfers")
        .axis_desc_style((FONT, 14))
        .label_style((FONT, 12))
        .y_label_formatter(&|v| si(*v, ""))
        .x_label_formatter(&|v| micros(*v))
        .light_line_style(RGBColor(244, 244, 244))
        .max_light_lines(2)
        .draw()?;
    if xfer.bins.is_empty() {
        let style = TextStyle::from((FONT, 16).into_font()).color(&RGBColor(120, 120, 120));
        chart.draw_series(std::iter::once(Text::new(
            "no agent_xfer_time events".to_owned(),
            (x_start * 3.0, y_end * 0.5),
            style,
        )))?;
        return Ok(());
    }
    let bar = RGBColor(55, 126, 184);
    chart.draw_series(xfer.bins.iter().map(|b| {
        Rectangle::new(
            [(shown(b.low), 0.0), (shown(b.high), b.count as f64)],
            bar.mix(0.75).filled(),
        )
    }))?;
    let stats = &xfer.stats;
    let marks = [("p50", stats.p50), ("p90", stats.p90), ("p99", stats.p99)];
    for (i, (name, value)) in marks.into_iter().enumerate() {
        let Some(v) = value else { continue };
        let colour = MARKERS[i];
        let x = shown(v).clamp(x_start, x_end);
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(x, 0.0), (x, y_end * 0.92)],
            colour.stroke_width(2),
        )))?;
        // Staggered so that close markers keep their labels apart; right of
        // the line in the left half of the axis, left of it in the right half.
        let label_y = y_end * (0.985 - 0.05 * i as f64);
        let right_half = x * x > x_start * x_end;
        let anchor = if right_half { HPos::Right } else { HPos::Left };
        let style = TextStyle::from((FONT, 12).into_font())
            .color(&colour)
            .pos(Pos::new(anchor, VPos::Top));
        chart.draw_series(std::iter::once(Text::new(
            format!(" {name} {v} µs "),
            (x, label_y),
            style,
        )))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_as_people_write_them() {
        assert_eq!(micros(250.0), "250 µs");
        assert_eq!(micros(2500.0), "2.5 ms");
        assert_eq!(micros(10_000.0), "10 ms");
        assert_eq!(micros(1_000_000.0), "1 s");
        assert_eq!(micros(0.5), "0.5 µs");
    }
}
