//! The `hostname` label.

use std::sync::OnceLock;

/// This machine's host name (`gethostname`), read once; `unknown` if it cannot
/// be read.
pub(crate) fn hostname() -> &'static str {
    static NAME: OnceLock<String> = OnceLock::new();
    NAME.get_or_init(|| read().unwrap_or_else(|| "unknown".to_owned()))
}

fn read() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: buf is valid for writes of buf.len() bytes; gethostname writes at
    // most that many and does not keep the pointer.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return None;
    }
    // POSIX leaves truncated names possibly unterminated: stop at NUL or the end.
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    let name = String::from_utf8_lossy(&buf[..end]).into_owned();
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
