//! Helpers of the `top` and `report` tests: rings filled with known events,
//! the report's embedded data, PNG images decoded, tools that may be missing.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use nixl_telemetry::ring::{layout, RingWriter};
use nixl_telemetry::{Category, Event};

/// `tests/data/report`: the captures with known numbers (see its README).
pub fn report_fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/report")
}

/// The model `report` embeds in its page (`<script id="report-data">`).
pub fn report_data(html: &str) -> serde_json::Value {
    let start_tag = "<script type=\"application/json\" id=\"report-data\">";
    let start = html.find(start_tag).expect("the page embeds its data") + start_tag.len();
    let end = start + html[start..].find("</script>").expect("the data ends");
    serde_json::from_str(&html[start..end]).expect("the data is JSON")
}

/// A decoded PNG: (width, height, RGBA-or-RGB bytes, bytes per pixel).
pub fn decode_png(path: &Path) -> (u32, u32, Vec<u8>, usize) {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder
        .read_info()
        .unwrap_or_else(|e| panic!("{}: not a PNG: {e}", path.display()));
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("a frame");
    buf.truncate(info.buffer_size());
    let channels = info.color_type.samples();
    (info.width, info.height, buf, channels)
}

/// How many distinct colours (RGB) an image holds, and the share of its
/// pixels that are not white.
pub fn colour_stats(pixels: &[u8], channels: usize) -> (usize, f64) {
    let mut colours = std::collections::HashSet::new();
    let mut inked = 0usize;
    let total = pixels.len() / channels;
    for px in pixels.chunks_exact(channels) {
        let rgb = match channels {
            1 | 2 => [px[0], px[0], px[0]],
            _ => [px[0], px[1], px[2]],
        };
        colours.insert(rgb);
        if rgb != [255, 255, 255] {
            inked += 1;
        }
    }
    (colours.len(), inked as f64 / total.max(1) as f64)
}

/// A ring of `layout` for `agent` in `dir`, with room for `capacity` slots.
pub fn ring(
    dir: &Path,
    agent: &str,
    capacity: usize,
    layout: &'static layout::RingLayout,
) -> RingWriter {
    RingWriter::create_with_layout(dir, agent, capacity, layout).expect("create the ring")
}

/// One completed transfer's events, as an agent records them: the time,
/// the bytes and one request.
pub fn transfer(ts: u64, write: bool, bytes: u64, xfer_us: u64) -> [Event; 3] {
    let (b, r) = if write {
        ("agent_tx_bytes", "agent_tx_requests_num")
    } else {
        ("agent_rx_bytes", "agent_rx_requests_num")
    };
    [
        Event::new(ts, Category::PERFORMANCE, "agent_xfer_time", xfer_us),
        Event::new(ts, Category::TRANSFER, b, bytes),
        Event::new(ts, Category::TRANSFER, r, 1),
    ]
}

/// Whether `program` can be run (found on `PATH`).
pub fn have(program: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// Skips a test whose tool is missing, saying so; fails instead when
/// `NIXL_VIEW_TESTS_REQUIRED` is set (`scripts/test-view.sh` sets it after
/// installing the tools, so that a broken install cannot pass).
pub fn skip_without(program: &str, test: &str) -> bool {
    if have(program) {
        return false;
    }
    if std::env::var_os("NIXL_VIEW_TESTS_REQUIRED").is_some() {
        panic!("{test}: `{program}` is not installed, and NIXL_VIEW_TESTS_REQUIRED is set");
    }
    eprintln!(
        "SKIPPED {test}: `{program}` is not installed (scripts/test-view.sh installs it and runs this test)"
    );
    true
}
