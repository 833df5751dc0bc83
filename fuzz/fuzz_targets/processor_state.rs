//! The processor's state file (`process --state`): the input is the file, loaded
//! through the command's own locking loader. Properties: no panic; a refusal is an
//! error with a message; loading agrees with the library's parser on the same
//! text; accepted metrics written back and loaded again are equal, and writing is
//! a fixed point (the second text is the first).

#![no_main]
#![forbid(unsafe_code)]

use std::fs;
use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use nixl_telemetry_cli::process::load_state;
use nixl_telemetry_processor::Metrics;

fn state_path() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("nixl-fuzz-state-{}", std::process::id()));
        fs::create_dir_all(&dir).expect("temporary directory");
        dir.join("state.json")
    })
}

fuzz_target!(|data: &[u8]| {
    let path = state_path();
    fs::write(path, data).expect("write the state file");
    let loaded = load_state(path);
    let direct = std::str::from_utf8(data).map(Metrics::from_json_str);
    match loaded {
        Ok(metrics) => {
            match direct {
                Ok(Ok(same)) => assert!(same == metrics, "the loader and the parser disagree"),
                _ => panic!("the loader accepted what the parser refuses"),
            }
            let json = metrics.to_json_string();
            let back = Metrics::from_json_str(&json)
                .unwrap_or_else(|e| panic!("the metrics' own state is refused: {e}\n{json}"));
            assert!(back == metrics, "the state read back differs\n{json}");
            assert_eq!(back.to_json_string(), json, "writing is not a fixed point");
        }
        Err(e) => {
            assert!(!format!("{e:#}").is_empty());
            if let Ok(Ok(_)) = direct {
                panic!("the loader refused what the parser accepts: {e:#}");
            }
        }
    }
});
