//! How failed requests are re-sent, and counted. An HTTP answer that asks for a
//! retry (429, 502, 503, 504) without a readable `Retry-After` waits for the
//! exponential backoff: it is never re-sent at once. Only a request that got
//! no answer at all (the connection failed) is re-sent at once, once, before
//! the backoff. Every failed attempt counts once in
//! `nixl_telemetry_otlp_requests_total{result="retried"}`.

use crate::common;

use std::io::Read;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use nixl_telemetry_abi::{Category, Event};
use nixl_telemetry_otlp::{OtlpExporter, Settings};

fn transfer() -> Vec<Event> {
    vec![
        Event::new(
            1_700_000_000_000_000,
            Category::PERFORMANCE,
            "agent_xfer_time",
            5,
        ),
        Event::new(
            1_700_000_000_000_000,
            Category::TRANSFER,
            "agent_tx_bytes",
            64,
        ),
        Event::new(
            1_700_000_000_000_000,
            Category::TRANSFER,
            "agent_tx_requests_num",
            1,
        ),
    ]
}

/// Settings sending to `base` every `interval_ms`, retrying after
/// `initial_ms` doubling up to `max_ms` (each ±50%), 2 s per request.
fn paced(base: &str, interval_ms: u64, initial_ms: u64, max_ms: u64) -> Settings {
    let mut settings = Settings::new(base).unwrap();
    settings.export_interval = Duration::from_millis(interval_ms);
    settings.retry_initial = Duration::from_millis(initial_ms);
    settings.retry_max = Duration::from_millis(max_ms);
    settings.metrics.timeout = Duration::from_secs(2);
    settings
}

/// An exporter for `agent` with one transfer recorded and published.
fn exporting(agent: &str, settings: &Settings) -> OtlpExporter {
    let mut e = OtlpExporter::with_settings(agent, settings).unwrap();
    e.record(&transfer()).unwrap();
    e.publish();
    e
}

/// The delay before retry `k` (0-based) lies in [0.5, 1.5) × this base.
fn backoff_base(settings: &Settings, k: u32) -> Duration {
    (settings.retry_initial * 2u32.pow(k)).min(settings.retry_max)
}

#[test]
#[ignore = "needs the OTLP receiver's Python packages: run scripts/test-otlp.sh"]
fn throttling_answers_without_a_readable_retry_after_wait_for_the_backoff() {
    let receiver = Receiver::start();
    // Four retryable answers: no Retry-After, an unreadable one, none, an
    // unreadable date.
    receiver.control(
        r#"{"mode": "unavailable", "status": [429, 502, 503, 504],
            "retry_after": [null, "soon", null, "Sun, 32 Foo 1994 08:49:37 GMT"],
            "times": 4, "path": "/v1/metrics"}"#,
    );
    // One metrics request, retried four times well within an interval (the
    // delays' bases are 100, 200, 400, 400 ms), so none is superseded.
    let settings = paced(&receiver.base_url(), 3000, 100, 400);
    let e = exporting("throttled", &settings);

    let reqs = receiver.wait_for(
        Duration::from_secs(20),
        "four refusals, then a delivery",
        |r| !accepted(r, "/v1/metrics").is_empty(),
    );
    let posts: Vec<&serde_json::Value> =
        reqs.iter().filter(|r| r["path"] == "/v1/metrics").collect();
    let statuses: Vec<i64> = posts
        .iter()
        .map(|r| r["status"].as_i64().unwrap())
        .collect();
    assert_eq!(statuses, [429, 502, 503, 504, 200], "one POST per attempt");
    for k in 0..4 {
        let gap = posts[k + 1]["time"].as_f64().unwrap() - posts[k]["time"].as_f64().unwrap();
        let least = backoff_base(&settings, k as u32).as_secs_f64() * 0.5;
        // 10 ms of slack for the receiver's clock readings.
        assert!(
            gap >= least - 0.010,
            "the answer {} was re-sent after {:.1} ms, before the backoff's least {:.0} ms",
            statuses[k],
            gap * 1e3,
            least * 1e3
        );
    }
    // Each attempt counted once, in the stats and in the exported self-metric.
    let deadline = Instant::now() + Duration::from_secs(10);
    while e.stats().metric_requests_delivered == 0 {
        assert!(Instant::now() < deadline, "{:?}", e.stats());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(e.stats().metric_requests_retried, 4, "{:?}", e.stats());
    let reqs = receiver.wait_for(Duration::from_secs(20), "the next metrics request", |r| {
        accepted(r, "/v1/metrics").len() >= 2
    });
    let last = last_metrics(&reqs);
    let retried = [("signal", "metrics"), ("result", "retried")];
    assert_eq!(
        self_value(&last, "nixl_telemetry_otlp_requests_total", &retried),
        4
    );
    let delivered = [("signal", "metrics"), ("result", "delivered")];
    assert_eq!(
        self_value(&last, "nixl_telemetry_otlp_requests_total", &delivered),
        1
    );
}

/// A collector that accepts connections and hangs up without answering.
struct HangingUp {
    port: u16,
    accepted: Arc<Mutex<Vec<Instant>>>,
}

impl HangingUp {
    fn start() -> HangingUp {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&accepted);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                seen.lock().unwrap().push(Instant::now());
                // Read the request head, then close without a word.
                stream
                    .set_read_timeout(Some(Duration::from_millis(200)))
                    .unwrap();
                let _ = stream.read(&mut [0u8; 4096]);
            }
        });
        HangingUp { port, accepted }
    }

    fn times(&self) -> Vec<Instant> {
        self.accepted.lock().unwrap().clone()
    }
}

#[test]
fn a_request_without_an_answer_is_resent_at_once_only_once_and_every_attempt_counts() {
    let collector = HangingUp::start();
    let settings = paced(
        &format!("http://127.0.0.1:{}", collector.port),
        200,
        400,
        400,
    );
    let e = exporting("hung-up-on", &settings);

    // Six rounds, then a quiet moment (the backoff's least is 200 ms) to
    // compare the connections the collector saw with the attempts counted.
    let deadline = Instant::now() + Duration::from_secs(30);
    let (times, retried) = loop {
        assert!(Instant::now() < deadline, "{:?}", e.stats());
        let seen = collector.times().len();
        std::thread::sleep(Duration::from_millis(100));
        if seen >= 12 && collector.times().len() == seen {
            let retried = e.stats().metric_requests_retried;
            let times = collector.times();
            if times.len() == seen {
                break (times, retried);
            }
        }
    };
    assert_eq!(
        retried,
        times.len() as u64,
        "every attempt that got no answer counts once"
    );
    assert_eq!(e.stats().metric_requests_delivered, 0);
    // Attempts come in pairs: the request, and at once its one re-send; then
    // the backoff (at least 200 ms) before the next pair.
    let gaps: Vec<Duration> = times.windows(2).map(|w| w[1] - w[0]).collect();
    for (i, gap) in gaps.iter().enumerate() {
        if i % 2 == 0 {
            assert!(
                *gap < Duration::from_millis(150),
                "the re-send after no answer came {gap:?} later: {gaps:?}"
            );
        } else {
            assert!(
                *gap >= Duration::from_millis(190),
                "a third attempt came {gap:?} after the re-send, before the backoff: {gaps:?}"
            );
        }
    }
}
