//! `nixl-telemetry serve` and `nixl-telemetry store` as processes: `kill -9` under
//! load loses no answered record (SQLite, PostgreSQL), the listen-address rule,
//! SIGTERM, and moving metrics between stores with `store export|import`.
//!
//! The PostgreSQL tests need the server `scripts/test-service.sh` starts (its URL
//! in NIXL_TELEMETRY_TEST_POSTGRES_URL) and are skipped with a message without it.

// The service's own test support (the helpers this file does not use are allowed).
#[allow(dead_code)]
#[path = "../../../service/tests/it/support/http.rs"]
mod http;
#[allow(dead_code)]
#[path = "../../../service/tests/it/support/postgres.rs"]
mod pg;
#[path = "../../../service/tests/it/support/records.rs"]
mod records;

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use pg::TestDatabase;
use records::{accepted_corpus, at_one_time, library_metrics};

const BIN: &str = env!("CARGO_BIN_EXE_nixl-telemetry");

/// A `serve` process and the address it listens on.
struct Server {
    child: Child,
    addr: SocketAddr,
    /// What it printed on standard error, collected by a thread.
    said: Arc<Mutex<String>>,
}

impl Server {
    /// Starts `nixl-telemetry serve --listen 127.0.0.1:0 ARGS…` and waits for its
    /// "listening on" line.
    fn start(args: &[&str], token: Option<&str>) -> Server {
        Server::start_as(Command::new(BIN), args, token)
    }

    /// As [`Server::start`], through `command` (the binary, or a program that
    /// runs it, such as `prlimit … -- BIN`).
    fn start_as(mut command: Command, args: &[&str], token: Option<&str>) -> Server {
        command
            .args(["serve", "--listen", "127.0.0.1:0"])
            // The records' envelopes are of a fixed day of the past.
            .args(["--max-envelope-skew", "any"])
            .args(args)
            .env_remove("NIXL_TELEMETRY_METRICS_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if let Some(token) = token {
            command.env("NIXL_TELEMETRY_METRICS_TOKEN", token);
        }
        let mut child = command.spawn().expect("nixl-telemetry serve starts");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let said = Arc::new(Mutex::new(String::new()));
        let mut addr = None;
        for line in lines.by_ref() {
            let line = line.unwrap();
            said.lock().unwrap().push_str(&format!("{line}\n"));
            if let Some(rest) = line.split("listening on http://").nth(1) {
                addr = Some(rest.split(' ').next().unwrap().parse().unwrap());
                break;
            }
        }
        let Some(addr) = addr else {
            let status = child.wait().unwrap();
            panic!(
                "serve exited ({status}) without listening:\n{}",
                said.lock().unwrap()
            );
        };
        let collected = said.clone();
        thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                collected.lock().unwrap().push_str(&format!("{line}\n"));
            }
        });
        Server { child, addr, said }
    }

    fn kill_9(mut self) {
        self.child.kill().expect("SIGKILL"); // Child::kill sends SIGKILL
        self.child.wait().unwrap();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `nixl-telemetry ARGS…` with `stdin`.
fn run(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .env_remove("NIXL_TELEMETRY_METRICS_TOKEN")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("nixl-telemetry starts");
    // A command that refuses its arguments exits without reading its input: the
    // pipe may then be closed before all of it is written.
    match child.stdin.take().unwrap().write_all(stdin.as_bytes()) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        Err(e) => panic!("writing to nixl-telemetry's stdin: {e}"),
    }
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A number from the clock, different from run to run.
fn seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    nanos ^ (u64::from(std::process::id()) << 32)
}

/// What 8 clients got before the server died: the records answered 201, and the
/// ones under way (sent, unanswered), which may or may not have been applied.
struct Load {
    answered: Vec<String>,
    under_way: Vec<String>,
}

/// Posts records from 8 clients until the server is killed once `kill_after`
/// records have been answered; returns what was answered and what was under way.
fn post_until_killed(server: Server, records: &[String], kill_after: usize) -> Load {
    let answered = Arc::new(Mutex::new(Vec::new()));
    let under_way = Arc::new(Mutex::new(Vec::new()));
    let count = Arc::new(AtomicUsize::new(0));
    let dead = Arc::new(AtomicBool::new(false));
    let addr = server.addr;
    thread::scope(|scope| {
        for client in 0..8 {
            let (answered, under_way, count, dead) = (&answered, &under_way, &count, &dead);
            scope.spawn(move || {
                let Ok(mut connection) = http::Connection::open(addr) else {
                    return;
                };
                for record in records.iter().skip(client).step_by(8) {
                    if dead.load(Ordering::SeqCst) {
                        return;
                    }
                    match connection.request("POST", "/api/v1/metrics", &[], record.as_bytes()) {
                        Ok(response) => {
                            assert_eq!(response.status, 201, "{}", response.text());
                            answered.lock().unwrap().push(record.clone());
                            count.fetch_add(1, Ordering::SeqCst);
                        }
                        Err(_) => {
                            under_way.lock().unwrap().push(record.clone());
                            return;
                        }
                    }
                }
            });
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        while count.load(Ordering::SeqCst) < kill_after && Instant::now() < deadline {
            thread::sleep(Duration::from_micros(200));
        }
        assert!(Instant::now() < deadline, "the clients got no answers");
        dead.store(true, Ordering::SeqCst);
        server.kill_9();
    });
    let answered = Arc::try_unwrap(answered).unwrap().into_inner().unwrap();
    let under_way = Arc::try_unwrap(under_way).unwrap().into_inner().unwrap();
    assert!(under_way.len() <= 8);
    Load {
        answered,
        under_way,
    }
}

/// Kills `serve` on `store` under load three times; after each kill a new `serve`
/// must hold every answered record, and of the records under way some or none,
/// never a part of one: the map equals the library's for the answered records plus
/// some subset of those under way.
fn kill_9_under_load_loses_nothing(store: &str, rounds: usize) {
    // All at one time: the metrics do not depend on the order of the records.
    let records = at_one_time(&accepted_corpus(), "2025-01-13T12:00:00");
    let records: Vec<String> = records.iter().cycle().take(4000).cloned().collect();
    let mut applied: Vec<String> = Vec::new();
    let mut random = seed();
    let shown: nixl_telemetry_service::StoreUrl = store.parse().unwrap();
    eprintln!("kill -9 under load on {shown}: seed {random}");
    for round in 0..rounds {
        random = random
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let kill_after = 50 + (random >> 33) as usize % 400;
        let server = Server::start(&["--store", store], None);
        let offset = (round * 997) % records.len();
        let mut rotated = records[offset..].to_vec();
        rotated.extend_from_slice(&records[..offset]);
        let load = post_until_killed(server, &rotated, kill_after);
        applied.extend(load.answered.iter().cloned());

        let server = Server::start(&["--store", store], None);
        let stored = http::get(server.addr, "/api/v1/metrics").text().to_owned();
        let subsets = 1usize << load.under_way.len();
        let applied_subset = (0..subsets).find(|mask| {
            let mut with: Vec<&String> = applied.iter().collect();
            with.extend(
                (0..load.under_way.len())
                    .filter(|i| mask & (1 << i) != 0)
                    .map(|i| &load.under_way[i]),
            );
            library_metrics(with).to_json_string() == stored
        });
        let Some(mask) = applied_subset else {
            panic!(
                "round {round} (killed after {kill_after} answers): the store holds neither \
                 the {} answered records nor them with any of the {} under way",
                applied.len(),
                load.under_way.len()
            );
        };
        applied.extend(
            (0..load.under_way.len())
                .filter(|i| mask & (1 << i) != 0)
                .map(|i| load.under_way[i].clone()),
        );
        eprintln!(
            "round {round}: killed after {} answers; {} under way, {} of them applied",
            load.answered.len(),
            load.under_way.len(),
            mask.count_ones()
        );
        drop(server);
    }
}

#[test]
fn kill_9_under_load_loses_no_answered_record_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("metrics.db");
    kill_9_under_load_loses_nothing(&format!("sqlite:{}", path.display()), 3);
    // The file is a sound database after three crashes under load.
    let connection = rusqlite::Connection::open(&path).unwrap();
    let check: String = connection
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(check, "ok");
}

#[test]
fn kill_9_under_load_loses_no_answered_record_on_postgres() {
    let Some(db) = TestDatabase::create("kill_9_under_load_loses_no_answered_record_on_postgres")
    else {
        return;
    };
    kill_9_under_load_loses_nothing(&db.url, 2);
}

#[test]
fn a_non_loopback_address_needs_a_token_or_insecure() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("m.db").display());
    let out = run(&["serve", "--listen", "0.0.0.0:0", "--store", &store], "");
    assert_eq!(out.status.code(), Some(2));
    let said = text(&out.stderr);
    for part in [
        "refusing to listen on 0.0.0.0:0 without a token",
        "Set NIXL_TELEMETRY_METRICS_TOKEN",
        "--insecure",
    ] {
        assert!(said.contains(part), "{said}");
    }
    assert!(!dir.path().join("m.db").exists(), "nothing was created");
    // With the token, or with --insecure (and a warning), it serves.
    for (token, extra) in [(Some("a-token"), None), (None, Some("--insecure"))] {
        let mut command = Command::new(BIN);
        command
            .args(["serve", "--listen", "0.0.0.0:0", "--store", &store])
            .args(extra)
            .env_remove("NIXL_TELEMETRY_METRICS_TOKEN")
            .stderr(Stdio::piped());
        if let Some(token) = token {
            command.env("NIXL_TELEMETRY_METRICS_TOKEN", token);
        }
        let mut child = command.spawn().unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut said = String::new();
        for line in lines.by_ref() {
            let line = line.unwrap();
            said.push_str(&line);
            said.push('\n');
            if line.contains("listening on") {
                break;
            }
        }
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(said.contains("listening on http://0.0.0.0:"), "{said}");
        match token {
            Some(_) => assert!(said.contains("token required"), "{said}"),
            None => assert!(
                said.contains("without authentication (--insecure)"),
                "{said}"
            ),
        }
    }
    // An empty token is a mistake, said so.
    let out = Command::new(BIN)
        .args(["serve", "--store", &store])
        .env("NIXL_TELEMETRY_METRICS_TOKEN", "")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("NIXL_TELEMETRY_METRICS_TOKEN is set but empty"));
}

#[test]
fn sigterm_stops_serve_within_its_grace_while_a_client_dribbles() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("m.db").display());
    let mut server = Server::start(
        &[
            "--store",
            &store,
            "--header-timeout",
            "60",
            "--shutdown-grace",
            "0.5",
        ],
        None,
    );
    let mut slow = std::net::TcpStream::connect(server.addr).unwrap();
    std::io::Write::write_all(&mut slow, b"POST /api/v1/metrics HTTP/1.1\r\nHo").unwrap();
    thread::sleep(Duration::from_millis(300));
    let started = std::time::Instant::now();
    let status = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = server.child.wait().unwrap();
    assert!(exit.success(), "{exit}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    drop(slow);
}

#[test]
fn store_export_of_a_missing_sqlite_file_is_refused_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("typo.db");
    let out = run(
        &[
            "store",
            "export",
            "--store",
            &format!("sqlite:{}", missing.display()),
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("no SQLite store at"),
        "{}",
        text(&out.stderr)
    );
    assert!(out.stdout.is_empty());
    assert!(!missing.exists(), "nothing was created");
}

#[test]
fn a_token_with_surrounding_white_space_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("m.db").display());
    let out = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--store", &store])
        .env("NIXL_TELEMETRY_METRICS_TOKEN", "secret ")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("white space"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn serve_refuses_a_time_that_is_not_a_number_of_seconds() {
    for (flag, value) in [
        ("--header-timeout", "0"),
        ("--idle-timeout", "1e9"),
        ("--store-timeout", "soon"),
        ("--max-envelope-skew", "never"),
    ] {
        let out = run(&["serve", flag, value], "");
        assert_eq!(out.status.code(), Some(2), "{flag} {value}");
        let said = text(&out.stderr);
        assert!(said.contains(flag), "{said}");
        assert!(said.contains("is not a number of seconds"), "{said}");
    }
    let out = run(&["serve", "--max-envelope-skew", "later"], "");
    assert!(
        text(&out.stderr).contains("or `any`"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn running_out_of_descriptors_is_logged_and_outlived() {
    // 64 descriptors, and a connection cap far above them: accepting fails
    // (EMFILE) long before the cap is reached.
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("m.db").display());
    let mut limited = Command::new("prlimit");
    limited.args(["--nofile=64:64", "--", BIN]);
    let server = Server::start_as(
        limited,
        &["--store", &store, "--max-connections", "1000"],
        None,
    );
    // Each connection is left in the middle of a request's head, so it is held.
    let mut held = Vec::new();
    for _ in 0..100 {
        match std::net::TcpStream::connect_timeout(&server.addr, Duration::from_secs(2)) {
            Ok(mut stream) => {
                let _ = stream.write_all(b"GET /healthz HTTP/1.1\r\n");
                held.push(stream);
            }
            Err(_) => break,
        }
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let wanted = "cannot accept a connection";
    while !server.said.lock().unwrap().contains(wanted) && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(50));
    }
    let said = server.said.lock().unwrap().clone();
    let line = said
        .lines()
        .find(|line| line.contains(wanted))
        .unwrap_or_else(|| panic!("no line says the descriptors ran out:\n{said}"));
    assert!(line.contains("ERROR"), "{line}");
    assert!(line.contains("Too many open files"), "{line}");
    assert!(
        line.contains("raise the descriptor limit") && line.contains("--max-connections"),
        "the line says what to do: {line}"
    );
    // Once the held connections go, the service answers again.
    drop(held);
    let mut answered = None;
    while answered.is_none() && Instant::now() < deadline + Duration::from_secs(10) {
        if let Ok(mut connection) = http::Connection::open(server.addr) {
            connection.set_read_timeout(Duration::from_secs(2));
            answered = connection
                .request("GET", "/healthz", &[], b"")
                .ok()
                .map(|r| r.status);
        }
        if answered.is_none() {
            thread::sleep(Duration::from_millis(100));
        }
    }
    assert_eq!(
        answered,
        Some(200),
        "served again:\n{}",
        server.said.lock().unwrap()
    );
    // And the failures were rate-limited: one line, not one every 100 ms.
    let lines = server.said.lock().unwrap().matches(wanted).count();
    assert!(lines <= 2, "{lines} lines");
}

#[test]
fn sigterm_stops_serve_after_the_requests_under_way() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("m.db").display());
    let mut server = Server::start(&["--store", &store], None);
    let record = r#"{"action": "train", "success": true}"#;
    for _ in 0..3 {
        assert_eq!(http::post(server.addr, record).status, 201);
    }
    let status = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = server.child.wait().unwrap();
    assert!(exit.success(), "{exit}");
    thread::sleep(Duration::from_millis(50));
    assert!(server
        .said
        .lock()
        .unwrap()
        .contains("nixl-telemetry serve: stopped"));
    let out = run(&["store", "export", "--store", &store], "");
    assert!(text(&out.stdout).contains("\"total_action_train_pass\": 3,"));
}

#[test]
fn store_export_and_import_move_metrics_from_sqlite_to_postgres() {
    let Some(db) = TestDatabase::create("store_export_and_import_move_metrics") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let sqlite = format!("sqlite:{}", dir.path().join("m.db").display());
    let server = Server::start(&["--store", &sqlite], None);
    let lines = accepted_corpus();
    for line in &lines {
        assert_eq!(http::post(server.addr, line).status, 201);
    }
    drop(server);
    let exported = run(&["store", "export", "--store", &sqlite], "");
    assert!(exported.status.success(), "{}", text(&exported.stderr));
    let document = text(&exported.stdout);
    assert_eq!(document, library_metrics(&lines).to_json_string());

    let dry = run(
        &["store", "import", "--store", &db.url, "--dry-run"],
        &document,
    );
    assert!(dry.status.success(), "{}", text(&dry.stderr));
    let summary = text(&dry.stdout);
    let count = library_metrics(&lines).len();
    for part in [
        "mode: merge".to_owned(),
        "metrics in the store: 0".to_owned(),
        format!("  new: {count}"),
        format!("metrics in the store afterwards: {count}"),
        "dry run: nothing was changed".to_owned(),
    ] {
        assert!(summary.contains(&part), "{part:?} in\n{summary}");
    }
    assert_eq!(
        text(&run(&["store", "export", "--store", &db.url], "").stdout),
        "{}\n"
    );
    let done = run(
        &["store", "import", "--store", &db.url, "--merge"],
        &document,
    );
    assert!(done.status.success(), "{}", text(&done.stderr));
    assert!(text(&done.stdout).ends_with("imported\n"));
    let output = dir.path().join("from-postgres.json");
    let out = run(
        &[
            "store",
            "export",
            "--store",
            &db.url,
            "--output",
            output.to_str().unwrap(),
        ],
        "",
    );
    assert!(out.status.success());
    assert_eq!(std::fs::read_to_string(&output).unwrap(), document);
}

#[test]
fn store_import_reads_a_tao_export_and_refuses_bad_documents() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("m.db").display());
    let tao = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../service/tests/data/tao_export.json"
    ))
    .unwrap();
    let dry = run(&["store", "import", "--store", &store, "--dry-run"], &tao);
    assert!(dry.status.success(), "{}", text(&dry.stderr));
    let summary = text(&dry.stdout);
    assert!(
        summary.contains("ignored keys of the document: _id, name"),
        "{summary}"
    );
    assert!(
        summary.contains("not valid Prometheus series: 10"),
        "{summary}"
    );
    let done = run(&["store", "import", "--store", &store, "--replace"], &tao);
    assert!(done.status.success(), "{}", text(&done.stderr));
    assert!(text(&done.stdout).contains("removed (not in the document): 0"));
    let mut expected: serde_json::Value = serde_json::from_str(&tao).unwrap();
    expected.as_object_mut().unwrap().remove("_id");
    expected.as_object_mut().unwrap().remove("name");
    let exported: serde_json::Value =
        serde_json::from_slice(&run(&["store", "export", "--store", &store], "").stdout).unwrap();
    assert_eq!(exported, expected);

    for (document, says) in [
        (
            "{\"a_total\": 1.5}",
            "metrics key `a_total`: expected a 64-bit integer",
        ),
        ("{\"last_updated\": \"soon\"}", "last_updated"),
        ("[]", "must be a JSON object"),
        ("{\"a_total\": ", "not valid JSON"),
    ] {
        let out = run(&["store", "import", "--store", &store], document);
        assert_eq!(out.status.code(), Some(2), "{document}");
        assert!(
            text(&out.stderr).contains(says),
            "{document}: {}",
            text(&out.stderr)
        );
    }
    let after: serde_json::Value =
        serde_json::from_slice(&run(&["store", "export", "--store", &store], "").stdout).unwrap();
    assert_eq!(after, expected, "a refused document changes nothing");
    let out = run(
        &["store", "import", "--store", &store, "--merge", "--replace"],
        "{}",
    );
    assert_eq!(out.status.code(), Some(2));
}
