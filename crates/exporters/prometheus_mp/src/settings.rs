//! The multi-process settings: the run's directory, the stale TTL and the
//! rank variable, on top of the single-process exporter's settings (listen
//! address, buckets, server limits).

use std::path::PathBuf;
use std::time::Duration;

use nixl_telemetry_abi::env;
use nixl_telemetry_prometheus::settings::VARIABLES as BASE_VARIABLES;
use nixl_telemetry_prometheus::{Settings, SettingsError};

use crate::error::MpError;
use crate::layout::MAX_BOUNDS;

/// `NIXL_TELEMETRY_MULTIPROC_DIR`: the directory every process of the run
/// writes its stores into (required).
pub const ENV_DIR: &str = "NIXL_TELEMETRY_MULTIPROC_DIR";
/// `NIXL_TELEMETRY_MP_STALE_TTL`: seconds a released store stays published
/// after its last update.
pub const ENV_STALE_TTL: &str = "NIXL_TELEMETRY_MP_STALE_TTL";
/// `NIXL_TELEMETRY_RANK_ENV`: the name of the variable holding the local rank.
pub const ENV_RANK_ENV: &str = "NIXL_TELEMETRY_RANK_ENV";
/// The rank variable when [`ENV_RANK_ENV`] is not set.
pub const DEFAULT_RANK_ENV: &str = "LOCAL_RANK";
/// The stale TTL when [`ENV_STALE_TTL`] is not set.
pub const DEFAULT_STALE_TTL: Duration = Duration::from_secs(30);

/// Everything a multi-process exporter is created with besides its agent's name.
#[derive(Debug, Clone, PartialEq)]
pub struct MpSettings {
    /// Address, buckets and server limits, as for the single-process exporter.
    pub base: Settings,
    /// The run's directory.
    pub dir: PathBuf,
    /// How long a released store stays published after its last update.
    pub stale_ttl: Duration,
    /// The `local_rank` label, if the rank variable is set.
    pub local_rank: Option<String>,
}

impl MpSettings {
    /// Settings for `dir` around `base`, with the default TTL and no rank.
    pub fn new(base: Settings, dir: impl Into<PathBuf>) -> MpSettings {
        MpSettings {
            base,
            dir: dir.into(),
            stale_ttl: DEFAULT_STALE_TTL,
            local_rank: None,
        }
    }

    /// Reads the process environment; `output_path` is the host's
    /// `NIXL_TELEMETRY_EXPORTER_OUTPUT_PATH`. A variable of this plug-in or
    /// of the single-process one that is not UTF-8 is an error naming it
    /// (`nixl_telemetry_abi::env`'s rule); the rank's value is taken as
    /// text, invalid sequences replaced.
    pub fn from_env(output_path: Option<&str>) -> Result<MpSettings, MpError> {
        for variable in BASE_VARIABLES
            .into_iter()
            .chain([ENV_DIR, ENV_STALE_TTL, ENV_RANK_ENV])
        {
            env::var(variable).map_err(|e| SettingsError::NotUtf8 {
                variable: e.variable,
                value: e.value_lossy,
            })?;
        }
        MpSettings::from_lookup(output_path, |name| {
            std::env::var_os(name).map(|v| v.to_string_lossy().into_owned())
        })
    }

    /// Reads the settings through `lookup` (a variable's value, if set).
    pub fn from_lookup(
        output_path: Option<&str>,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<MpSettings, MpError> {
        let base = Settings::from_lookup(output_path, &lookup)?;
        let dir = match lookup(ENV_DIR) {
            Some(d) if !d.is_empty() => PathBuf::from(d),
            _ => return Err(MpError::NoDirectory),
        };
        let stale_ttl = match lookup(ENV_STALE_TTL) {
            None => DEFAULT_STALE_TTL,
            Some(text) => parse_ttl(&text)?,
        };
        let rank_env = lookup(ENV_RANK_ENV)
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| DEFAULT_RANK_ENV.to_owned());
        let local_rank = lookup(&rank_env);
        let settings = MpSettings {
            base,
            dir,
            stale_ttl,
            local_rank,
        };
        settings.check()?;
        Ok(settings)
    }

    /// Refuses what a store cannot hold.
    pub fn check(&self) -> Result<(), MpError> {
        let bounds = self.base.buckets.bounds().len();
        if bounds > MAX_BOUNDS {
            return Err(MpError::TooManyBuckets { bounds });
        }
        Ok(())
    }
}

fn parse_ttl(text: &str) -> Result<Duration, MpError> {
    let fail = || MpError::StaleTtl {
        value: text.to_owned(),
    };
    let seconds: f64 = text.trim().parse().map_err(|_| fail())?;
    if !seconds.is_finite() || seconds <= 0.0 || seconds > 1e9 {
        return Err(fail());
    }
    Ok(Duration::from_secs_f64(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn read(vars: &[(&str, &str)]) -> Result<MpSettings, MpError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        MpSettings::from_lookup(None, |k| map.get(k).cloned())
    }

    #[test]
    fn the_directory_is_required() {
        let e = read(&[]).unwrap_err().to_string();
        assert!(e.contains("NIXL_TELEMETRY_MULTIPROC_DIR"), "{e}");
        assert!(read(&[(ENV_DIR, "")]).is_err());
    }

    #[test]
    fn defaults_and_the_rank_variable() {
        let s = read(&[(ENV_DIR, "/d")]).unwrap();
        assert_eq!(s.stale_ttl, DEFAULT_STALE_TTL);
        assert_eq!(s.local_rank, None);
        let s = read(&[(ENV_DIR, "/d"), ("LOCAL_RANK", "3")]).unwrap();
        assert_eq!(s.local_rank.as_deref(), Some("3"));
        let s = read(&[
            (ENV_DIR, "/d"),
            ("LOCAL_RANK", "3"),
            (ENV_RANK_ENV, "SLURM_LOCALID"),
            ("SLURM_LOCALID", "5"),
            (ENV_STALE_TTL, "2.5"),
        ])
        .unwrap();
        assert_eq!(s.local_rank.as_deref(), Some("5"));
        assert_eq!(s.stale_ttl, Duration::from_millis(2500));
    }

    #[test]
    fn bad_ttls_and_too_many_buckets_are_refused() {
        for bad in ["0", "-1", "x", "inf", ""] {
            let e = read(&[(ENV_DIR, "/d"), (ENV_STALE_TTL, bad)])
                .unwrap_err()
                .to_string();
            assert!(e.contains(ENV_STALE_TTL) && e.contains("accepted"), "{e}");
        }
        let bounds: Vec<String> = (1..=33).map(|i| i.to_string()).collect();
        let e = read(&[
            (ENV_DIR, "/d"),
            ("NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US", &bounds.join(",")),
        ])
        .unwrap_err()
        .to_string();
        assert!(e.contains("33") && e.contains("32"), "{e}");
        let bounds: Vec<String> = (1..=32).map(|i| i.to_string()).collect();
        assert!(read(&[
            (ENV_DIR, "/d"),
            ("NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US", &bounds.join(",")),
        ])
        .is_ok());
    }
}
