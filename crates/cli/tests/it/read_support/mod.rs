//! Helpers shared by the reader and demo tests: the binaries, the fixtures,
//! rings built byte by byte, and subprocesses with deadlines.

#![allow(dead_code)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The `telemetry_reader` binary.
pub fn reader() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_telemetry_reader"));
    cmd.env("TZ", "UTC");
    cmd
}

/// The `nixl-telemetry` binary.
pub fn cli() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nixl-telemetry"));
    cmd.env("TZ", "UTC");
    for var in [
        "NIXL_TELEMETRY_ENABLE",
        "NIXL_TELEMETRY_DIR",
        "NIXL_TELEMETRY_EXPORTER",
        "NIXL_TELEMETRY_BUFFER_SIZE",
        "NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

/// The Python reader, run by `python3`.
pub fn python_reader() -> Command {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../python/telemetry_reader.py");
    let mut cmd = Command::new("python3");
    cmd.arg(script).env("TZ", "UTC");
    cmd
}

/// `tests/data/nixl_v1`: rings written by NIXL's own version-1 ring (see its README).
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/nixl_v1")
}

/// Runs `cmd` to completion (killed after 60 s) and returns its output.
pub fn run(cmd: &mut Command) -> Output {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    wait_with_deadline(child, Duration::from_secs(60))
}

/// Waits for `child`, killing it after `limit`; collects both outputs.
pub fn wait_with_deadline(mut child: Child, limit: Duration) -> Output {
    let mut stdout = child.stdout.take().expect("piped stdout");
    let mut stderr = child.stderr.take().expect("piped stderr");
    let out_thread = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stdout.read_to_end(&mut buf);
        buf
    });
    let err_thread = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stderr.read_to_end(&mut buf);
        buf
    });
    let end = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > end {
            let _ = child.kill();
            let status = child.wait().expect("wait after kill");
            let stderr = err_thread.join().unwrap();
            panic!(
                "process did not finish within {limit:?} ({status}); stderr:\n{}",
                String::from_utf8_lossy(&stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Output {
        status,
        stdout: out_thread.join().unwrap(),
        stderr: err_thread.join().unwrap(),
    }
}

/// Sends `signal` (e.g. "INT") to `pid`.
pub fn kill(pid: u32, signal: &str) {
    let ok = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .expect("run kill")
        .success();
    assert!(ok, "kill -{signal} {pid} failed");
}

/// Stdout as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("stdout is UTF-8")
}

/// Stderr as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Asserts success and returns stdout.
pub fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "failed with {}; stderr:\n{}",
        out.status,
        stderr(out)
    );
    stdout(out)
}

/// A slot, byte by byte.
#[derive(Debug, Clone)]
pub struct Slot {
    pub timestamp_us: u64,
    pub category: i32,
    pub name: [u8; 32],
    pub value: u64,
}

impl Slot {
    /// A slot whose name is `name` (at most 31 bytes), NUL-padded.
    pub fn new(timestamp_us: u64, category: i32, name: &[u8], value: u64) -> Slot {
        assert!(name.len() <= 31);
        let mut field = [0u8; 32];
        field[..name.len()].copy_from_slice(name);
        Slot {
            timestamp_us,
            category,
            name: field,
            value,
        }
    }

    /// A slot with a raw 32-byte name field (possibly without NUL).
    pub fn raw(timestamp_us: u64, category: i32, name: [u8; 32], value: u64) -> Slot {
        Slot {
            timestamp_us,
            category,
            name,
            value,
        }
    }
}

/// A ring file built byte by byte.
#[derive(Debug, Clone)]
pub struct RingImage {
    pub write_pos: u64,
    pub read_pos: u64,
    pub version: i32,
    pub capacity: u64,
    pub mask: u64,
    /// Slots written from `read_pos` on.
    pub slots: Vec<Slot>,
    /// Whether a trailer follows: (events_written, dropped_staging, dropped_ring, closed).
    pub trailer: Option<(u64, u64, u64, bool)>,
}

impl RingImage {
    /// A valid ring of `capacity` holding `slots` from slot 0.
    pub fn new(capacity: u64, slots: Vec<Slot>) -> RingImage {
        assert!((slots.len() as u64) < capacity);
        RingImage {
            write_pos: slots.len() as u64,
            read_pos: 0,
            version: 1,
            capacity,
            mask: capacity.wrapping_sub(1),
            slots,
            trailer: None,
        }
    }

    /// The file's bytes: header, `capacity` slots (the given ones placed from
    /// `read_pos`, wrapping), then the trailer if any.
    pub fn bytes(&self) -> Vec<u8> {
        let cap = self.capacity.min(1 << 20) as usize;
        let mut out = Vec::with_capacity(40 + 56 * cap + 64);
        out.extend_from_slice(&self.write_pos.to_le_bytes());
        out.extend_from_slice(&self.read_pos.to_le_bytes());
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&1i32.to_le_bytes());
        out.extend_from_slice(&self.capacity.to_le_bytes());
        out.extend_from_slice(&self.mask.to_le_bytes());
        out.resize(40 + 56 * cap, 0);
        for (i, s) in self.slots.iter().enumerate() {
            let at = 40 + 56 * ((self.read_pos as usize + i) % cap);
            out[at..at + 8].copy_from_slice(&s.timestamp_us.to_le_bytes());
            out[at + 8..at + 12].copy_from_slice(&s.category.to_le_bytes());
            out[at + 12..at + 44].copy_from_slice(&s.name);
            out[at + 44..at + 48].copy_from_slice(&[0xfc, 0x7e, 0, 0]);
            out[at + 48..at + 56].copy_from_slice(&s.value.to_le_bytes());
        }
        if let Some((written, staging, ring, closed)) = self.trailer {
            out.extend_from_slice(b"NXTLTRL\0");
            out.extend_from_slice(&1u32.to_le_bytes());
            out.extend_from_slice(&64u32.to_le_bytes());
            out.extend_from_slice(&4242u32.to_le_bytes());
            out.extend_from_slice(&u32::from(closed).to_le_bytes());
            out.extend_from_slice(&1_700_000_000_000_000u64.to_le_bytes());
            out.extend_from_slice(&written.to_le_bytes());
            out.extend_from_slice(&staging.to_le_bytes());
            out.extend_from_slice(&ring.to_le_bytes());
            out.extend_from_slice(&1_700_000_001_000_000u64.to_le_bytes());
        }
        out
    }

    /// Writes the file.
    pub fn write(&self, path: &Path) {
        std::fs::write(path, self.bytes()).expect("write ring");
    }
}

/// `read_pos` and `write_pos` of a ring file.
pub fn positions(path: &Path) -> (u64, u64) {
    let bytes = std::fs::read(path).unwrap();
    let u = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    (u(8), u(0))
}

/// Copies every file of `from` into `to` (created), writable.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            let dest = to.join(entry.file_name());
            std::fs::copy(entry.path(), &dest).unwrap();
            let mut perm = std::fs::metadata(&dest).unwrap().permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            perm.set_readonly(false);
            std::fs::set_permissions(&dest, perm).unwrap();
        }
    }
}

/// Polls `check` every 20 ms until it holds or `limit` passes.
pub fn wait_until(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    check()
}

/// Starts `cmd` (a following reader) and collects its stdout lines as they
/// come; stderr stays piped for [`finish`].
pub fn follow(mut cmd: Command) -> (Child, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::BufRead;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = std::sync::Arc::clone(&lines);
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            match line {
                Ok(l) => sink.lock().unwrap().push(l),
                Err(_) => break,
            }
        }
    });
    (child, lines)
}

/// How many collected lines contain `needle`.
pub fn count(lines: &std::sync::Mutex<Vec<String>>, needle: &str) -> usize {
    lines
        .lock()
        .unwrap()
        .iter()
        .filter(|l| l.contains(needle))
        .count()
}

/// Waits (10 s at most) for a reader that was sent a stop signal; returns
/// its exit code and stderr.
pub fn finish(mut child: Child) -> (Option<i32>, String) {
    let mut err = String::new();
    let mut stderr = child.stderr.take().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "reader did not stop after the signal"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    stderr.read_to_string(&mut err).unwrap();
    (status.code(), err)
}
