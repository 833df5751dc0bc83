//! Prints what a scrape returns for a small set of events (text format, or
//! OpenMetrics with `--openmetrics`).

use nixl_telemetry_abi::{Category, Event};
use nixl_telemetry_prometheus::{Format, PrometheusExporter, Settings};

fn main() {
    let settings = Settings::new("127.0.0.1:0".parse().expect("an address"));
    let mut exporter =
        PrometheusExporter::with_settings("agent \"a\"\nb\\c", &settings).expect("an exporter");
    exporter.record(&[
        Event::new(1, Category::TRANSFER, "agent_tx_bytes", 4096),
        Event::new(1, Category::TRANSFER, "agent_tx_requests_num", 1),
        Event::new(1, Category::PERFORMANCE, "agent_xfer_time", 120),
        Event::new(1, Category::ERROR, "NIXL_ERR_BACKEND", 1),
        Event::new(1, Category::ERROR, "NIXL_ERR_WEIRD", 1),
        Event::new(1, Category::BACKEND, "ucx.rndv", 3),
        Event::new(1, Category::CUSTOM, "agent_tx_bytes", 3),
    ]);
    let format = if std::env::args().any(|a| a == "--openmetrics") {
        Format::OpenMetrics
    } else {
        Format::Text
    };
    let body = exporter.render(format);
    print!("{}", String::from_utf8_lossy(&body));
}
