//! `nixl-telemetry top` in a real terminal: run under tmux, keys sent
//! (sort, reverse, select, pause, help, quit), the screen captured and read;
//! a terminal that goes away (its window closed) ends `top`.
//! Skipped, saying so, when tmux is not installed; `scripts/test-view.sh`
//! installs it and runs this test.

use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::view_support::{ring, skip_without, transfer};
use nixl_telemetry::ring::layout;

/// A tmux server of this test's own (its own socket), killed on drop.
struct Tmux {
    socket: String,
}

impl Tmux {
    /// The server of the test `test`.
    fn new(test: &str) -> Tmux {
        Tmux {
            socket: format!("nixl-top-test-{}-{test}", std::process::id()),
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("run tmux")
    }

    /// Starts the session `top`, `width` × `height`, running `command`.
    fn start(&self, width: u16, height: u16, command: &[&str]) {
        let (width, height) = (width.to_string(), height.to_string());
        let mut args = vec![
            "new-session",
            "-d",
            "-s",
            "top",
            "-x",
            &width,
            "-y",
            &height,
        ];
        args.extend_from_slice(command);
        let started = self.run(&args);
        assert!(
            started.status.success(),
            "tmux: {}",
            String::from_utf8_lossy(&started.stderr)
        );
    }

    fn screen(&self) -> String {
        let out = self.run(&["capture-pane", "-p", "-t", "top"]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn keys(&self, keys: &str) {
        assert!(self.run(&["send-keys", "-t", "top", keys]).status.success());
    }

    /// Waits (10 s at most) until the screen satisfies `check`.
    fn wait_for(&self, what: &str, check: impl Fn(&str) -> bool) -> String {
        let end = Instant::now() + Duration::from_secs(10);
        loop {
            let screen = self.screen();
            if check(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < end,
                "waited for {what}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn alive(&self) -> bool {
        self.run(&["has-session", "-t", "top"]).status.success()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

/// The line of the table holding `agent`, and its index on the screen.
fn line_of(screen: &str, agent: &str) -> usize {
    screen
        .lines()
        .position(|l| l.trim_start().starts_with(&format!("{agent} ")))
        .unwrap_or_else(|| panic!("no line for {agent}:\n{screen}"))
}

#[test]
fn keys_sort_select_pause_help_and_quit_on_a_real_terminal() {
    if skip_without(
        "tmux",
        "keys_sort_select_pause_help_and_quit_on_a_real_terminal",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // alpha sends little and receives much; beta the other way round.
    let mut alpha = ring(dir.path(), "alpha", 4096, &layout::V1);
    let mut beta = ring(dir.path(), "beta", 4096, &layout::V4);
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                alpha.push_batch(&transfer(1, true, 100, 20));
                alpha.push_batch(&transfer(1, false, 90_000, 20));
                beta.push_batch(&transfer(1, true, 50_000, 700));
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let tmux = Tmux::new("keys");
    let status_file = dir.path().join("status");
    let command = format!(
        "'{}' top --interval 0.5 '{}'; echo $? > '{}'",
        env!("CARGO_BIN_EXE_nixl-telemetry"),
        dir.path().display(),
        status_file.display()
    );
    tmux.start(150, 30, &[&command]);

    // The view: title, both agents with rates, sorted by agent name.
    let screen = tmux.wait_for("both agents with rates", |s| {
        s.contains("nixl-telemetry top")
            && s.contains("B/s")
            && s.contains("alpha")
            && s.contains("beta")
    });
    assert!(screen.contains("AGENT▼"), "{screen}");
    assert!(line_of(&screen, "alpha") < line_of(&screen, "beta"));
    assert!(screen.contains("peeking"));
    // The detail panel of the selected agent (the first), with its sparkline.
    assert!(screen.contains("┌ alpha "), "{screen}");
    assert!(screen.contains("throughput, last 60 s"), "{screen}");

    // s: by events/s; s: by bytes sent — beta sends more, it comes first.
    tmux.keys("s");
    tmux.wait_for("sorted by events/s", |s| s.contains("EVENTS/S▼"));
    tmux.keys("s");
    let screen = tmux.wait_for("sorted by tx", |s| s.contains("TX B/S▼"));
    assert!(
        line_of(&screen, "beta") < line_of(&screen, "alpha"),
        "{screen}"
    );
    assert!(
        screen.contains("sort (TX B/S)"),
        "the footer says so:\n{screen}"
    );
    // r: the other way round.
    tmux.keys("r");
    let screen = tmux.wait_for("reversed", |s| s.contains("TX B/S▲"));
    assert!(
        line_of(&screen, "alpha") < line_of(&screen, "beta"),
        "{screen}"
    );

    // Selection follows the agent: alpha is selected; down selects beta.
    tmux.keys("Down");
    let screen = tmux.wait_for("beta selected", |s| s.contains("┌ beta "));
    assert!(screen.contains("ring version 4"), "{screen}");
    tmux.keys("k");
    tmux.wait_for("alpha selected", |s| s.contains("┌ alpha "));

    // p: paused, and resumed.
    tmux.keys("p");
    tmux.wait_for("paused", |s| s.contains("PAUSED"));
    tmux.keys("p");
    tmux.wait_for("resumed", |s| !s.contains("PAUSED"));

    // ?: the help, closed by any key.
    tmux.keys("?");
    tmux.wait_for("help", |s| {
        s.contains("help: keys") && s.contains("sort by the next column")
    });
    tmux.keys("x");
    tmux.wait_for("help closed", |s| !s.contains("help: keys"));

    // q: top exits, with status 0, and gives the terminal back.
    tmux.keys("q");
    let end = Instant::now() + Duration::from_secs(10);
    while read_status(&status_file).is_none() {
        assert!(
            Instant::now() < end,
            "top did not exit after q:\n{}",
            tmux.screen()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(read_status(&status_file).as_deref(), Some("0"));
    let gone = Instant::now() + Duration::from_secs(5);
    while tmux.alive() && Instant::now() < gone {
        std::thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
}

fn read_status(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

/// Whether process `pid` has ended (gone, or a zombie no one reaped).
fn ended(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // The state follows the command name in parentheses.
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z')),
    }
}

/// The terminal closed under `top` (its tmux session killed: the pane's
/// terminal hangs up): `top` ends within seconds instead of reading the
/// dead terminal forever at full CPU.
#[test]
fn top_ends_when_its_terminal_goes_away() {
    if skip_without("tmux", "top_ends_when_its_terminal_goes_away") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut alpha = ring(dir.path(), "alpha", 4096, &layout::V1);
    alpha.push_batch(&transfer(1, true, 100, 20));
    let tmux = Tmux::new("hang-up");
    tmux.start(
        120,
        20,
        &[
            env!("CARGO_BIN_EXE_nixl-telemetry"),
            "top",
            "--interval",
            "0.5",
            &dir.path().display().to_string(),
        ],
    );
    tmux.wait_for("the view", |s| s.contains("alpha") && s.contains("B/s"));
    let out = tmux.run(&["display-message", "-p", "-t", "top", "#{pane_pid}"]);
    let pid: u32 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("the pane's process id");
    assert!(!ended(pid));
    assert!(tmux.run(&["kill-session", "-t", "top"]).status.success());
    let end = Instant::now() + Duration::from_secs(5);
    while !ended(pid) && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
    }
    let still = !ended(pid);
    if still {
        // Not left behind, whatever the outcome.
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    assert!(
        !still,
        "top (pid {pid}) still runs 5 s after its terminal went away"
    );
    drop(alpha);
}
