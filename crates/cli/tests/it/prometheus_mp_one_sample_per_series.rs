//! `prometheus_mp` publishes one sample per label set, with ranks in PID
//! namespaces of their own (`unshare --pid --fork`, as containers run them:
//! every rank is pid 1), scraped by a real Prometheus server:
//!
//! * a rank killed and restarted gets pid 1 again, so its new store has the
//!   labels of its predecessor's released one: the one series goes on from the
//!   predecessor's totals (no second sample, no counter reset), its gauges are
//!   the live rank's, and it outlives the predecessor's stale TTL;
//! * a copy of a live rank's store beside it is not published: the live
//!   rank's values are, and the copy is removed after the TTL.
//!
//! Each rank is `nixl-telemetry emit --events -`, fed transfers through its
//! standard input while it runs. Needs `prometheus` on PATH (`bash
//! scripts/prometheus-test-env.sh`) and `unshare` (util-linux) with the right
//! to make PID namespaces (root, or unprivileged user namespaces). Every
//! process is killed when the test ends, pass or fail.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::prometheus_support::{
    free_addr, http_get, prometheus_mp_plugin_dir, wait_for, without_nixl_env, PrometheusServer,
    Reaped, Scrape,
};

/// Seconds a released store stays published after its last update.
const TTL: f64 = 3.0;

/// The `unshare` options that run a command as pid 1 of a PID namespace of
/// its own, killed with `unshare`: plain as root, in a user namespace of its
/// own otherwise.
fn pid_namespace() -> &'static [&'static str] {
    static OPTIONS: OnceLock<&'static [&'static str]> = OnceLock::new();
    OPTIONS.get_or_init(|| {
        const ROOT: &[&str] = &["--pid", "--fork", "--kill-child"];
        const USER: &[&str] = &["--user", "--map-root-user", "--pid", "--fork", "--kill-child"];
        for options in [ROOT, USER] {
            let pid = Command::new("unshare")
                .args(options)
                .args(["sh", "-c", "echo $$"])
                .stderr(Stdio::null())
                .output();
            if pid.is_ok_and(|o| o.status.success() && o.stdout == b"1\n") {
                return options;
            }
        }
        panic!("`unshare --pid --fork` (util-linux) cannot make a PID namespace here: run as root or allow unprivileged user namespaces")
    })
}

/// A rank of the run: `emit` as pid 1 of its own PID namespace, recording
/// what is written to its standard input.
struct Rank {
    input: ChildStdin,
    process: Reaped,
}

impl Rank {
    fn start(run: &Run, agent: &str, local_rank: &str, log: &str) -> Rank {
        let mut cmd = Command::new("unshare");
        without_nixl_env(&mut cmd)
            .args(pid_namespace())
            .arg(env!("CARGO_BIN_EXE_nixl-telemetry"))
            .args(["emit", "--agent", agent, "--events", "-"])
            .env("NIXL_TELEMETRY_ENABLE", "1")
            .env("NIXL_TELEMETRY_EXPORTER", "prometheus_mp")
            .env("NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR", &run.plugins)
            .env("NIXL_TELEMETRY_MULTIPROC_DIR", &run.dir)
            .env(
                "NIXL_TELEMETRY_PROMETHEUS_PORT",
                run.addr.port().to_string(),
            )
            .env("NIXL_TELEMETRY_PROMETHEUS_LOCAL", "y")
            .env("NIXL_TELEMETRY_MP_STALE_TTL", TTL.to_string())
            .env("LOCAL_RANK", local_rank);
        let log = run.tmp.path().join(log);
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("unshare starts");
        let input = child.stdin.take().unwrap();
        Rank {
            input,
            process: Reaped {
                name: format!("{agent} ({log:?})"),
                child,
                log,
            },
        }
    }

    /// Records one WRITE transfer of `bytes`.
    fn send(&mut self, bytes: u64) {
        writeln!(
            self.input,
            "{{\"xfer\":{{\"us\":40,\"write\":true,\"bytes\":{bytes}}}}}"
        )
        .unwrap();
        self.input.flush().unwrap();
    }

    /// `kill -9` of `unshare`, which kills the rank (`--kill-child`).
    fn kill(&mut self) {
        self.process.child.kill().unwrap();
        self.process.child.wait().unwrap();
    }
}

/// A run's directory, port and plug-in.
struct Run {
    tmp: tempfile::TempDir,
    plugins: PathBuf,
    dir: PathBuf,
    addr: SocketAddr,
}

impl Run {
    fn new() -> Run {
        pid_namespace();
        let tmp = tempfile::tempdir().unwrap();
        let plugins = prometheus_mp_plugin_dir(tmp.path());
        let dir = tmp.path().join("run");
        let addr: SocketAddr = format!("127.0.0.1:{}", free_addr().port()).parse().unwrap();
        Run {
            tmp,
            plugins,
            dir,
            addr,
        }
    }

    /// The `name{…agent_name="<agent>"…}` sample lines of a scrape.
    fn samples(&self, name: &str, agent: &str) -> Option<Vec<String>> {
        let (status, body) = http_get(self.addr, "/metrics", None).ok()?;
        (status == 200).then(|| samples(&body, name, agent))
    }

    /// The store files in the run's directory, by name.
    fn stores(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = std::fs::read_dir(&self.dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().ends_with(".store"))
            .collect();
        out.sort();
        out
    }
}

fn samples(body: &str, name: &str, agent: &str) -> Vec<String> {
    let agent = format!("agent_name=\"{agent}\"");
    body.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")) && l.contains(&agent))
        .map(str::to_owned)
        .collect()
}

fn value(line: &str) -> f64 {
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

/// Waits until the endpoint shows exactly one `name` sample for `agent`,
/// of value `want`; fails naming every sample it saw.
fn wait_for_one(run: &Run, ranks: &mut [&mut Rank], name: &str, agent: &str, want: f64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = Vec::new();
    loop {
        for rank in ranks.iter_mut() {
            rank.process.assert_running();
        }
        if let Some(seen) = run.samples(name, agent) {
            if seen.len() > 1 {
                panic!(
                    "{agent}: {} samples of one label set:\n{}",
                    seen.len(),
                    seen.join("\n")
                );
            }
            if seen.len() == 1 && value(&seen[0]) == want {
                return;
            }
            last = seen;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {name} of {agent} = {want}; last seen: {last:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Prometheus's own count of samples it rejected as duplicates.
fn duplicates_rejected(prometheus: &PrometheusServer) -> f64 {
    let (_, body) = http_get(prometheus.addr, "/metrics", None).unwrap();
    body.lines()
        .find_map(|l| l.strip_prefix("prometheus_target_scrapes_sample_duplicate_timestamp_total "))
        .expect("Prometheus counts duplicate samples")
        .parse()
        .unwrap()
}

/// What Prometheus holds for `promql`: one value per series, ascending.
fn series_values(prometheus: &PrometheusServer, promql: &str) -> Vec<f64> {
    let mut values: Vec<f64> = prometheus
        .expect_query(promql)
        .iter()
        .map(|s| s["value"][1].as_str().unwrap().parse().unwrap())
        .collect();
    values.sort_by(f64::total_cmp);
    values
}

/// Waits until Prometheus has exactly the values `want` (one per series,
/// ascending) for `promql`.
fn wait_for_prometheus(prometheus: &mut PrometheusServer, promql: &str, want: &[f64]) {
    wait_for(
        &format!("Prometheus: {promql} = {want:?}"),
        Duration::from_secs(60),
        || {
            prometheus.assert_running();
            (series_values(prometheus, promql) == want).then_some(())
        },
    );
}

/// A run: its owner (rank 1, which sent 1000 bytes), a Prometheus server
/// scraping it, and rank 0, which sent 4096 bytes, each in a PID namespace
/// of its own; both ranks' totals are on the endpoint.
fn start_run(rank_zero_log: &str) -> (Run, Rank, PrometheusServer, Rank) {
    let run = Run::new();
    let mut owner = Rank::start(&run, "rank-1", "1", "rank-1.log");
    owner.send(1000);
    wait_for_one(
        &run,
        &mut [&mut owner],
        "agent_tx_bytes_total",
        "rank-1",
        1000.0,
    );
    let prometheus = PrometheusServer::start(run.tmp.path(), Scrape::new(run.addr, "nixl"));
    let mut rank_zero = Rank::start(&run, "rank-0", "0", rank_zero_log);
    rank_zero.send(4096);
    wait_for_one(
        &run,
        &mut [&mut owner, &mut rank_zero],
        "agent_tx_bytes_total",
        "rank-0",
        4096.0,
    );
    (run, owner, prometheus, rank_zero)
}

#[test]
fn a_rank_restarted_with_the_same_pid_goes_on_as_one_series() {
    // The first life of rank 0 sends 4096 bytes, is scraped, and is killed:
    // its store is released, still published until the TTL.
    let (run, mut owner, mut prometheus, mut first) = start_run("rank-0-first.log");
    let labels = &run.samples("agent_tx_bytes_total", "rank-0").unwrap()[0];
    assert!(
        labels.contains("pid=\"1\""),
        "not in a PID namespace: {labels}"
    );
    assert!(
        run.samples("agent_tx_bytes_total", "rank-1").unwrap()[0].contains("pid=\"1\""),
        "both ranks are pid 1, told apart by agent and rank"
    );
    wait_for_prometheus(
        &mut prometheus,
        "agent_tx_bytes_total{agent_name=\"rank-0\"}",
        &[4096.0],
    );
    first.kill();

    // The restarted rank is pid 1 again: the same labels. It sends 12288
    // bytes, the last transfer 8192.
    let mut second = Rank::start(&run, "rank-0", "0", "rank-0-second.log");
    second.send(4096);
    second.send(8192);
    let mut live = [&mut owner, &mut second];
    // One sample: the predecessor's 4096 and the live rank's 12288.
    wait_for_one(&run, &mut live, "agent_tx_bytes_total", "rank-0", 16384.0);
    wait_for_one(
        &run,
        &mut live,
        "agent_tx_requests_num_total",
        "rank-0",
        3.0,
    );
    // Gauges are the live rank's.
    wait_for_one(&run, &mut live, "agent_tx_last_bytes", "rank-0", 8192.0);
    wait_for_one(&run, &mut live, "agent_xfer_time_us_count", "rank-0", 3.0);
    let body = http_get(run.addr, "/metrics", None).unwrap().1;
    nixl_telemetry_testsupport::promtool::assert_exporter_output_accepted(&body);
    wait_for_prometheus(
        &mut prometheus,
        "agent_tx_bytes_total{agent_name=\"rank-0\"}",
        &[16384.0],
    );
    wait_for_prometheus(
        &mut prometheus,
        "agent_tx_last_bytes{agent_name=\"rank-0\"}",
        &[8192.0],
    );

    // Past the predecessor's TTL its totals still count (its store is kept
    // while the rank it continues lives): no drop, no counter reset.
    std::thread::sleep(Duration::from_secs_f64(TTL + 1.0));
    second.send(4096);
    let mut live = [&mut owner, &mut second];
    wait_for_one(&run, &mut live, "agent_tx_bytes_total", "rank-0", 20480.0);
    assert_eq!(
        run.stores().len(),
        3,
        "the predecessor's store is kept: {:?}",
        run.stores()
    );
    wait_for_prometheus(
        &mut prometheus,
        "agent_tx_bytes_total{agent_name=\"rank-0\"}",
        &[20480.0],
    );
    assert_eq!(
        series_values(
            &prometheus,
            "resets(agent_tx_bytes_total{agent_name=\"rank-0\"}[5m])"
        ),
        [0.0],
        "the restart looks like no counter reset"
    );
    assert_eq!(
        duplicates_rejected(&prometheus),
        0.0,
        "Prometheus rejected no sample"
    );

    // When the rank ends too, both stores go after the TTL, together.
    second.kill();
    wait_for(
        "rank 0's stores to be reaped",
        Duration::from_secs(60),
        || {
            owner.process.assert_running();
            let gone = run.samples("agent_tx_bytes_total", "rank-0")?.is_empty();
            (gone && run.stores().len() == 1).then_some(())
        },
    );
    wait_for_one(
        &run,
        &mut [&mut owner],
        "agent_tx_bytes_total",
        "rank-1",
        1000.0,
    );
}

#[test]
fn a_copied_store_beside_a_live_one_is_not_published() {
    let (run, mut owner, mut prometheus, mut rank) = start_run("rank-0.log");
    // Rank 0's store is the newer of the two (its name ends in its creation
    // time); its copy gets a name listed before every other store.
    let stores = run.stores();
    assert_eq!(stores.len(), 2, "{stores:?}");
    let live_store = stores.iter().max_by_key(|p| creation_in_name(p)).unwrap();
    let copy = run.dir.join("nixl-mp.1.0.0.store");
    std::fs::copy(live_store, &copy).unwrap();
    assert_eq!(run.stores()[0], copy);

    rank.send(8192);
    let mut live = [&mut owner, &mut rank];
    wait_for_one(&run, &mut live, "agent_tx_bytes_total", "rank-0", 12288.0);
    wait_for_one(&run, &mut live, "agent_tx_last_bytes", "rank-0", 8192.0);
    wait_for_prometheus(
        &mut prometheus,
        "agent_tx_bytes_total{agent_name=\"rank-0\"}",
        &[12288.0],
    );
    wait_for_prometheus(&mut prometheus, "agent_tx_bytes_total", &[1000.0, 12288.0]);
    assert_eq!(
        duplicates_rejected(&prometheus),
        0.0,
        "Prometheus rejected no sample"
    );

    // The copy is removed once the TTL has run from its last update; the
    // live rank stays as it was.
    wait_for("the copy to be reaped", Duration::from_secs(60), || {
        rank.process.assert_running();
        let _ = http_get(run.addr, "/metrics", None);
        (!copy.exists()).then_some(())
    });
    assert!(live_store.exists());
    wait_for_one(
        &run,
        &mut [&mut owner, &mut rank],
        "agent_tx_bytes_total",
        "rank-0",
        12288.0,
    );
    assert_eq!(
        series_values(
            &prometheus,
            "resets(agent_tx_bytes_total{agent_name=\"rank-0\"}[5m])"
        ),
        [0.0]
    );
}

/// The creation time in a store's name (`nixl-mp.<pid>.<instance>.<ns>.store`).
fn creation_in_name(path: &Path) -> u128 {
    let name = path.file_name().unwrap().to_string_lossy();
    name.trim_end_matches(".store")
        .rsplit('.')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}
