//! Directory mode with more rings than the limit on open files allows at once:
//! both readers read every event of every ring (they open at most a bounded
//! number of rings at a time), consuming or peeking, once or following.

use std::process::Command;

use crate::read_support::*;

const RINGS: usize = 300;

/// `cmd` run under `ulimit -n 128` (the rings alone would need 300+).
fn limited(cmd: &Command) -> Command {
    let mut sh = Command::new("sh");
    sh.arg("-c")
        .arg("ulimit -n 128 && exec \"$@\"")
        .arg("sh")
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => sh.env(k, v),
            None => sh.env_remove(k),
        };
    }
    sh
}

fn many_rings(dir: &std::path::Path) {
    for i in 0..RINGS {
        RingImage::new(
            4,
            vec![
                Slot::new(1, 1, format!("e{i}_a").as_bytes(), i as u64),
                Slot::new(2, 5, format!("e{i}_b").as_bytes(), 1),
            ],
        )
        .write(&dir.join(format!("agent{i:04}")));
    }
}

#[test]
fn every_ring_is_read_above_the_open_file_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let (rust_dir, py_dir) = (tmp.path().join("r"), tmp.path().join("p"));
    for d in [&rust_dir, &py_dir] {
        std::fs::create_dir(d).unwrap();
        many_rings(d);
    }
    // Peeking twice, then consuming: every event each time, then none.
    for args in [
        &["--once", "--peek", "--json"][..],
        &["--once", "--json"][..],
    ] {
        let rust = run(&mut limited(reader().args(args).arg(&rust_dir)));
        let python = run(&mut limited(
            python_reader()
                .args(args)
                .arg("--telemetry_path")
                .arg(&py_dir),
        ));
        for (who, out) in [("rust", &rust), ("python", &python)] {
            assert!(out.status.success(), "{who} {args:?}: {}", stderr(out));
            assert_eq!(
                stdout(out).lines().count(),
                2 * RINGS,
                "{who} {args:?}: {}",
                stderr(out)
            );
            assert!(
                stderr(out).contains(&format!("Total events read: {}", 2 * RINGS)),
                "{who}"
            );
        }
        assert_eq!(stdout(&rust), stdout(&python));
    }
    let again = run(&mut limited(
        reader().args(["--once", "--json"]).arg(&rust_dir),
    ));
    assert_eq!(stdout(&again), "", "consumed: {}", stderr(&again));
    for i in [0, RINGS - 1] {
        let (read, write) = positions(&py_dir.join(format!("agent{i:04}")));
        assert_eq!(read, write, "python consumed agent{i:04}");
    }
}
