//! The `hostname` label every exporter gives its agents (NIXL's plug-in has it).

use std::sync::OnceLock;

/// This machine's host name (`gethostname`), read once; `unknown` if it cannot
/// be read.
pub fn hostname() -> &'static str {
    static NAME: OnceLock<String> = OnceLock::new();
    NAME.get_or_init(|| read().unwrap_or_else(|| "unknown".to_owned()))
}

fn read() -> Option<String> {
    // The node name `gethostname` also returns (Linux keeps one, in the UTS
    // namespace).
    let uname = rustix::system::uname();
    let name = uname.nodename().to_string_lossy().into_owned();
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    #[test]
    fn matches_the_kernel() {
        let kernel = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
        assert_eq!(super::hostname(), kernel.trim());
    }
}
