//! The multi-process plug-in (`prometheus_mp`) with real processes: eight
//! `nixl-telemetry emit --hold` ranks on one directory and one port, a real
//! Prometheus server scraping them, `kill -9` of the owner, a rank leaving
//! before the stale TTL, a second run on another port. Needs `prometheus` on
//! PATH (`bash scripts/prometheus-test-env.sh` installs it). Every process is
//! killed when the test ends, pass or fail. The exposition also goes through
//! `promtool check metrics`.

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::prometheus_support::{
    cli_without_nixl_env, free_addr, http_get, prometheus_mp_plugin_dir, wait_for,
    PrometheusServer, Reaped, Scrape,
};

const RANKS: u64 = 8;

/// The values of every `agent_tx_bytes_total` sample, by its `local_rank`.
fn tx_bytes_by_rank(body: &str) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = body
        .lines()
        .filter(|l| l.starts_with("agent_tx_bytes_total{"))
        .map(|l| {
            let rank = l
                .split("local_rank=\"")
                .nth(1)
                .and_then(|r| r.split('"').next())
                .unwrap_or("-")
                .to_owned();
            let value = l.rsplit(' ').next().unwrap().parse().unwrap();
            (rank, value)
        })
        .collect();
    out.sort();
    out
}

/// Bytes rank `r` sends: `r + 1` transfers of `1000 (r + 1)` bytes.
fn rank_bytes(r: u64) -> u64 {
    (r + 1) * (r + 1) * 1000
}

fn rank_events(r: u64) -> String {
    let mut lines = String::new();
    for _ in 0..=r {
        lines.push_str(&format!(
            "{{\"xfer\":{{\"us\":40,\"write\":true,\"bytes\":{}}}}}\n",
            (r + 1) * 1000
        ));
    }
    lines
}

/// The pids among `pids` that hold a TCP socket listening on `port`.
fn listeners(port: u16, pids: &[u32]) -> Vec<u32> {
    let mut inodes = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let local_port = f[1].rsplit(':').next().unwrap();
            if u16::from_str_radix(local_port, 16) == Ok(port) && f[3] == "0A" {
                inodes.push(format!("socket:[{}]", f[9]));
            }
        }
    }
    pids.iter()
        .copied()
        .filter(|pid| {
            std::fs::read_dir(format!("/proc/{pid}/fd"))
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|fd| std::fs::read_link(fd.path()).ok())
                .any(|link| inodes.iter().any(|i| link.as_os_str() == i.as_str()))
        })
        .collect()
}

/// An `emit --hold` rank of the run in `dir` on `port`.
#[allow(clippy::too_many_arguments)]
fn rank(
    tmp: &Path,
    plugins: &Path,
    dir: &Path,
    port: u16,
    r: u64,
    hold: &str,
    ttl: &str,
) -> Reaped {
    let events = tmp.join(format!("rank{r}.jsonl"));
    std::fs::write(&events, rank_events(r)).unwrap();
    Reaped::spawn(
        &format!("rank {r}"),
        cli_without_nixl_env()
            .args(["emit", "--agent", &format!("rank-{r}"), "--hold", hold])
            .arg("--events")
            .arg(&events)
            .env("NIXL_TELEMETRY_ENABLE", "1")
            .env("NIXL_TELEMETRY_EXPORTER", "prometheus_mp")
            .env("NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR", plugins)
            .env("NIXL_TELEMETRY_MULTIPROC_DIR", dir)
            .env("NIXL_TELEMETRY_PROMETHEUS_PORT", port.to_string())
            .env("NIXL_TELEMETRY_PROMETHEUS_LOCAL", "y")
            .env("NIXL_TELEMETRY_MP_STALE_TTL", ttl)
            .env("LOCAL_RANK", r.to_string()),
        tmp.join(format!("rank{r}-{port}.log")),
    )
}

#[test]
fn eight_ranks_behind_one_endpoint_survive_the_kill_of_the_owner() {
    let tmp = tempfile::tempdir().unwrap();
    let plugins = prometheus_mp_plugin_dir(tmp.path());
    let dir = tmp.path().join("run");
    std::fs::create_dir(&dir).unwrap();
    // Hostile neighbours the owner must step around.
    std::os::unix::fs::symlink("/etc/hostname", dir.join("nixl-mp.1.0.1.store")).unwrap();
    assert!(Command::new("mkfifo")
        .arg(dir.join("nixl-mp.2.0.2.store"))
        .status()
        .unwrap()
        .success());
    let port = free_addr().port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut ranks: Vec<Reaped> = (0..RANKS)
        .map(|r| rank(tmp.path(), &plugins, &dir, port, r, "600", "600"))
        .collect();
    let expected: Vec<(String, u64)> = (0..RANKS).map(|r| (r.to_string(), rank_bytes(r))).collect();
    let total: u64 = (0..RANKS).map(rank_bytes).sum();

    wait_for(
        "all eight ranks on the endpoint",
        Duration::from_secs(60),
        || {
            ranks.iter_mut().for_each(Reaped::assert_running);
            let (_, body) = http_get(addr, "/metrics", None).ok()?;
            (tx_bytes_by_rank(&body) == expected).then_some(())
        },
    );
    let (_, body) = http_get(addr, "/metrics", None).unwrap();
    nixl_telemetry_testsupport::promtool::assert_exporter_output_accepted(&body);
    let pids: Vec<u32> = ranks.iter().map(|r| r.child.id()).collect();
    let owners = listeners(port, &pids);
    assert_eq!(owners.len(), 1, "exactly one rank binds: {owners:?}");
    let owner = owners[0];

    let mut prometheus = PrometheusServer::start(tmp.path(), Scrape::new(addr, "nixl"));
    wait_for(
        "Prometheus to see every rank",
        Duration::from_secs(60),
        || {
            prometheus.assert_running();
            let count = prometheus.scalar("count(agent_tx_bytes_total)")?;
            let ranks_seen =
                prometheus.scalar("count(count by (local_rank) (agent_tx_bytes_total))")?;
            let sum = prometheus.scalar("sum(agent_tx_bytes_total)")?;
            (count == RANKS as f64 && ranks_seen == RANKS as f64 && sum == total as f64)
                .then_some(())
        },
    );
    assert_eq!(
        prometheus.scalar("sum(agent_tx_requests_num_total)"),
        Some(((RANKS * (RANKS + 1)) / 2) as f64)
    );

    // kill -9 of the owner: another rank takes over at its next export.
    let index = pids.iter().position(|&p| p == owner).unwrap();
    ranks[index].child.kill().unwrap();
    ranks[index].child.wait().unwrap();
    let killed_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let others: Vec<u32> = pids.iter().copied().filter(|&p| p != owner).collect();
    let new_owner = wait_for("a rank to take over", Duration::from_secs(30), || {
        let found = listeners(port, &others);
        (found.len() == 1).then(|| found[0])
    });
    assert_ne!(new_owner, owner);
    let (_, body) = http_get(addr, "/metrics", None).unwrap();
    assert_eq!(
        tx_bytes_by_rank(&body),
        expected,
        "the killed rank's totals stay published:\n{body}"
    );
    wait_for(
        "Prometheus to scrape the new owner",
        Duration::from_secs(60),
        || {
            prometheus.assert_running();
            let last = prometheus.scalar("max(timestamp(up{job=\"nixl\"} == 1))")?;
            (last > killed_at + 1.0).then_some(())
        },
    );
    assert_eq!(
        prometheus.scalar("sum(agent_tx_bytes_total)"),
        Some(total as f64)
    );
    assert_eq!(
        prometheus.scalar("count(agent_tx_bytes_total)"),
        Some(RANKS as f64)
    );
    assert_eq!(
        prometheus.scalar("sum(resets(agent_tx_bytes_total[5m]))"),
        Some(0.0),
        "counters stay monotonic across the takeover"
    );
    assert!(dir.join("nixl-mp.1.0.1.store").is_symlink());
    assert!(dir.join("nixl-mp.2.0.2.store").exists());
    for r in ranks.iter_mut() {
        if r.child.id() != owner {
            r.assert_running();
        }
    }
}

#[test]
fn a_rank_that_leaves_stays_published_until_the_ttl_then_is_reaped() {
    let tmp = tempfile::tempdir().unwrap();
    let plugins = prometheus_mp_plugin_dir(tmp.path());
    let dir = tmp.path().join("run");
    let port = free_addr().port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let ttl = 3.0;
    let mut owner = rank(tmp.path(), &plugins, &dir, port, 0, "600", "3");
    wait_for("the owner to serve", Duration::from_secs(60), || {
        owner.assert_running();
        http_get(addr, "/metrics", None)
            .ok()
            .filter(|(s, _)| *s == 200)
    });
    // The store is released when the rank exits, somewhere between its start and
    // the return of `wait`: the TTL runs from a moment after `started` and
    // before `left`.
    let started = Instant::now();
    let mut leaving = rank(tmp.path(), &plugins, &dir, port, 1, "0", "3");
    let status = leaving.child.wait().unwrap();
    assert!(status.success(), "{}", leaving.log());
    let left = Instant::now();
    let stores = || {
        std::fs::read_dir(&dir)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(".store")
            })
            .count()
    };
    let (_, body) = http_get(addr, "/metrics", None).unwrap();
    assert!(
        left.elapsed().as_secs_f64() < ttl,
        "the machine is too slow for this check"
    );
    assert_eq!(
        tx_bytes_by_rank(&body),
        [
            ("0".to_owned(), rank_bytes(0)),
            ("1".to_owned(), rank_bytes(1))
        ],
        "a departed rank stays visible before the TTL"
    );
    assert_eq!(stores(), 2);
    wait_for(
        "the departed rank to be reaped",
        Duration::from_secs(30),
        || {
            owner.assert_running();
            let (_, body) = http_get(addr, "/metrics", None).ok()?;
            (tx_bytes_by_rank(&body) == [("0".to_owned(), rank_bytes(0))]).then_some(())
        },
    );
    assert!(
        started.elapsed().as_secs_f64() >= ttl,
        "reaped before the TTL"
    );
    assert_eq!(stores(), 1, "its store is removed");
    assert!(owner.running());
}

#[test]
fn a_second_run_on_another_port_in_the_same_directory_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let plugins = prometheus_mp_plugin_dir(tmp.path());
    let dir = tmp.path().join("run");
    let port = free_addr().port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut first = rank(tmp.path(), &plugins, &dir, port, 0, "600", "30");
    wait_for("the first run to serve", Duration::from_secs(60), || {
        first.assert_running();
        http_get(addr, "/metrics", None)
            .ok()
            .filter(|(s, _)| *s == 200)
    });
    let other_port = free_addr().port();
    let mut second = rank(tmp.path(), &plugins, &dir, other_port, 1, "0", "30");
    let status = second.child.wait().unwrap();
    let log = second.log();
    assert_eq!(status.code(), Some(2), "{log}");
    assert!(
        log.contains("NIXL_TELEMETRY_MULTIPROC_DIR")
            && log.contains(&format!("127.0.0.1:{port}"))
            && log.contains(&format!("127.0.0.1:{other_port}")),
        "{log}"
    );
    // Without a directory at all, creation fails naming the variable.
    let out = Command::new(env!("CARGO_BIN_EXE_nixl-telemetry"))
        .args(["emit", "--agent", "x"])
        .env_remove("NIXL_TELEMETRY_MULTIPROC_DIR")
        .env("NIXL_TELEMETRY_ENABLE", "1")
        .env("NIXL_TELEMETRY_EXPORTER", "prometheus_mp")
        .env("NIXL_TELEMETRY_EXPORTER_PLUGIN_DIR", &plugins)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("needs NIXL_TELEMETRY_MULTIPROC_DIR"),
        "{stderr}"
    );
    // The first run goes on serving its one rank (once its first flush is in:
    // the endpoint answers before the rank's events have reached its store).
    let want = [("0".to_owned(), rank_bytes(0))];
    wait_for(
        "the first run's rank totals",
        Duration::from_secs(60),
        || {
            first.assert_running();
            let (_, body) = http_get(addr, "/metrics", None).ok()?;
            (tx_bytes_by_rank(&body) == want).then_some(())
        },
    );
}
