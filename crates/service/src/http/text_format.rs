//! Writing the Prometheus text format (0.0.4): a family's `# HELP` and `# TYPE`
//! lines, then its samples.

use std::fmt::Write as _;

/// A Prometheus text exposition being written.
#[derive(Debug, Default)]
pub(crate) struct TextFormat {
    out: String,
}

impl TextFormat {
    /// An empty exposition.
    pub fn new() -> TextFormat {
        TextFormat::default()
    }

    /// Starts family `name` of type `kind` (`counter`, `gauge`, `histogram`) with
    /// its help text (one line, no backslash).
    pub fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.out, "# HELP {name} {help}");
        let _ = writeln!(self.out, "# TYPE {name} {kind}");
    }

    /// One sample: `name{labels} value`; `labels` is the inside of the braces
    /// (`a="x",b="y"`, values escaped), empty for none.
    pub fn sample(&mut self, name: &str, labels: &str, value: impl std::fmt::Display) {
        if labels.is_empty() {
            let _ = writeln!(self.out, "{name} {value}");
        } else {
            let _ = writeln!(self.out, "{name}{{{labels}}} {value}");
        }
    }

    /// The text.
    pub fn finish(self) -> String {
        self.out
    }
}

/// A floating-point sample value as the text format writes it (`+Inf`, `NaN`).
pub(crate) fn float(value: f64) -> String {
    if value.is_nan() {
        "NaN".to_owned()
    } else if value == f64::INFINITY {
        "+Inf".to_owned()
    } else if value == f64::NEG_INFINITY {
        "-Inf".to_owned()
    } else {
        format!("{value}")
    }
}

/// Appends `value` escaped as a label value (`\\`, `\"`, `\n`).
pub(crate) fn escape_label_value(out: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_samples_and_escapes() {
        let mut text = TextFormat::new();
        text.family("a_total", "counter", "As.");
        text.sample("a_total", "", 3);
        text.sample("a_total", "k=\"v\"", 4);
        assert_eq!(
            text.finish(),
            "# HELP a_total As.\n# TYPE a_total counter\na_total 3\na_total{k=\"v\"} 4\n"
        );
        assert_eq!(
            [
                float(0.5),
                float(f64::INFINITY),
                float(f64::NAN),
                float(3.0)
            ],
            ["0.5", "+Inf", "NaN", "3"]
        );
        let mut out = String::new();
        escape_label_value(&mut out, "a\\b\"c\nd");
        assert_eq!(out, "a\\\\b\\\"c\\nd");
    }
}
