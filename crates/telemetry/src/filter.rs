//! `NIXL_TELEMETRY_ENABLED_METRICS`: a comma-separated glob allowlist of event names.

/// An allowlist of event-name globs. `*` matches any run of bytes (also none),
/// `?` matches exactly one character; every other character matches itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricFilter {
    patterns: Vec<String>,
    /// The patterns parsed once, so matching allocates nothing.
    parsed: Vec<Vec<Token>>,
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
        let parsed = patterns.iter().map(|p| parse_glob(p)).collect();
        (!patterns.is_empty()).then_some(MetricFilter { patterns, parsed })
    }

    /// The patterns in the order given.
    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }

    /// Whether `name` matches any pattern.
    pub fn allows(&self, name: &str) -> bool {
        self.parsed.iter().any(|p| match_tokens(p, name))
    }
}

/// One element of a parsed glob.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Literal(char),
    AnyChar,
    AnyRun,
    /// `[...]`: inclusive ranges (a single character is a range of one).
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

/// Parses a glob with `fnmatch` rules: `*`, `?`, `[seq]`, `[!seq]`, ranges
/// `a-z`, a `]` first in a set is literal, an unclosed `[` is literal.
fn parse_glob(pattern: &str) -> Vec<Token> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '*' => {
                if tokens.last() != Some(&Token::AnyRun) {
                    tokens.push(Token::AnyRun);
                }
                i += 1;
            }
            '?' => {
                tokens.push(Token::AnyChar);
                i += 1;
            }
            '[' => {
                let mut j = i + 1;
                let negated = chars.get(j) == Some(&'!');
                if negated {
                    j += 1;
                }
                let set_start = j;
                // A ']' right after '[' or '[!' belongs to the set.
                if chars.get(j) == Some(&']') {
                    j += 1;
                }
                while j < chars.len() && chars[j] != ']' {
                    j += 1;
                }
                if j >= chars.len() {
                    tokens.push(Token::Literal('['));
                    i += 1;
                    continue;
                }
                let set = &chars[set_start..j];
                let mut ranges = Vec::new();
                let mut k = 0;
                while k < set.len() {
                    if k + 2 < set.len() && set[k + 1] == '-' {
                        ranges.push((set[k], set[k + 2]));
                        k += 3;
                    } else {
                        ranges.push((set[k], set[k]));
                        k += 1;
                    }
                }
                tokens.push(Token::Class { negated, ranges });
                i = j + 1;
            }
            c => {
                tokens.push(Token::Literal(c));
                i += 1;
            }
        }
    }
    tokens
}

fn token_matches(token: &Token, c: char) -> bool {
    match token {
        Token::Literal(l) => *l == c,
        Token::AnyChar => true,
        Token::AnyRun => false,
        Token::Class { negated, ranges } => {
            ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != *negated
        }
    }
}

/// Matches `text` against a glob with `fnmatch` rules (`*`, `?`, `[seq]`,
/// `[!seq]`, case-sensitive), by character, iteratively with single-star
/// backtracking: linear in practice, never exponential.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    match_tokens(&parse_glob(pattern), text)
}

/// Matches `text` against parsed tokens without allocating: positions in the
/// text are byte offsets, advanced one character at a time.
fn match_tokens(p: &[Token], text: &str) -> bool {
    let next_char = |at: usize| text[at..].chars().next();
    let (mut pi, mut ti) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while let Some(c) = next_char(ti) {
        if pi < p.len() && p[pi] == Token::AnyRun {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && token_matches(&p[pi], c) {
            pi += 1;
            ti += c.len_utf8();
        } else if let Some((sp, st)) = star {
            let skipped = next_char(st).map_or(1, char::len_utf8);
            pi = sp + 1;
            ti = st + skipped;
            star = Some((sp, ti));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|t| *t == Token::AnyRun)
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
            ("agent_[tr]x_bytes", "agent_rx_bytes", true),
            ("agent_[tr]x_bytes", "agent_ax_bytes", false),
            ("agent_[!t]x_bytes", "agent_rx_bytes", true),
            ("agent_[!t]x_bytes", "agent_tx_bytes", false),
            ("v[0-9]", "v7", true),
            ("v[0-9]", "vx", false),
            ("[]]x", "]x", true),
            ("[!]]x", "ax", true),
            ("a[b", "a[b", true),
            ("a[b", "ab", false),
            ("[a-]", "-", true),
            ("**a", "xa", true),
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
