//! `NIXL_TELEMETRY_ENABLED_METRICS`: a comma-separated glob allowlist of event names.

/// An allowlist of event-name globs. `*` matches any run of bytes (also none),
/// `?` matches exactly one character; every other character matches itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricFilter {
    patterns: Vec<String>,
}

impl MetricFilter {
    /// Parses a comma-separated list; blanks around entries are trimmed and empty
    /// entries skipped. `None` when no pattern is left (everything is enabled).
    pub fn parse(list: &str) -> Option<MetricFilter> {
        let patterns: Vec<String> = list
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect();
        (!patterns.is_empty()).then_some(MetricFilter { patterns })
    }

    /// The patterns in the order given.
    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }

    /// Whether `name` matches any pattern.
    pub fn allows(&self, name: &str) -> bool {
        self.patterns.iter().any(|p| glob_match(p, name))
    }
}

/// Matches `text` against a glob with `*` and `?` (by character), iteratively
/// with single-star backtracking: linear in practice, never exponential.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        let cases = [
            ("*", "anything", true),
            ("*", "", true),
            ("agent_*", "agent_tx_bytes", true),
            ("agent_*", "ucx_writes", false),
            ("*_bytes", "agent_rx_bytes", true),
            ("agent_?x_bytes", "agent_tx_bytes", true),
            ("agent_?x_bytes", "agent_tax_bytes", false),
            ("a*b*c", "axxbyyc", true),
            ("a*b*c", "axxbyy", false),
            ("exact", "exact", true),
            ("exact", "exactly", false),
            ("é?", "éa", true),
        ];
        for (p, t, want) in cases {
            assert_eq!(glob_match(p, t), want, "{p} vs {t}");
        }
    }

    #[test]
    fn lists() {
        assert_eq!(MetricFilter::parse(""), None);
        assert_eq!(MetricFilter::parse(" , ,"), None);
        let f = MetricFilter::parse("agent_tx_*, NIXL_ERR_*").unwrap();
        assert!(f.allows("agent_tx_bytes"));
        assert!(f.allows("NIXL_ERR_BACKEND"));
        assert!(!f.allows("agent_rx_bytes"));
        assert_eq!(f.patterns().len(), 2);
    }
}
