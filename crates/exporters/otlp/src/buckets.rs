//! The latency histograms' bucket bounds, `NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US`,
//! with the same syntax, defaults and limits as the Prometheus plug-in.

use std::fmt;

/// `NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US`: the latency histograms' upper bounds, µs.
pub const ENV_BUCKETS: &str = "NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US";

/// The default upper bounds, µs: 1-2.5-5 steps from 10 µs to 10 s.
pub const DEFAULT_BUCKETS_US: [f64; 19] = [
    10.0,
    25.0,
    50.0,
    100.0,
    250.0,
    500.0,
    1_000.0,
    2_500.0,
    5_000.0,
    10_000.0,
    25_000.0,
    50_000.0,
    100_000.0,
    250_000.0,
    500_000.0,
    1_000_000.0,
    2_500_000.0,
    5_000_000.0,
    10_000_000.0,
];

/// The most bounds [`ENV_BUCKETS`] may list.
pub const MAX_BUCKETS: usize = 64;

/// Upper bounds of a latency histogram, µs, strictly increasing, without the
/// implicit overflow bucket.
#[derive(Clone, PartialEq)]
pub struct Buckets {
    bounds: Box<[f64]>,
    /// `floor(bound)`: an integer value is `<= bound` exactly when it is
    /// `<= floor(bound)`, so events (integer µs) are bucketed with integer
    /// comparisons.
    thresholds: Box<[u64]>,
}

impl fmt::Debug for Buckets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.bounds.iter()).finish()
    }
}

impl Default for Buckets {
    fn default() -> Self {
        Buckets::new(&DEFAULT_BUCKETS_US).expect("the default buckets are valid")
    }
}

impl Buckets {
    /// Checks and keeps `bounds`: 1 to [`MAX_BUCKETS`], each finite and
    /// positive, strictly increasing. `Err` says what is wrong.
    pub fn new(bounds: &[f64]) -> Result<Buckets, String> {
        if bounds.is_empty() {
            return Err("no bounds given".to_owned());
        }
        if bounds.len() > MAX_BUCKETS {
            return Err(format!(
                "{} bounds given, at most {MAX_BUCKETS} are allowed",
                bounds.len()
            ));
        }
        for (i, &b) in bounds.iter().enumerate() {
            if !b.is_finite() {
                return Err(format!("bound {} ({b}) is not a finite number", i + 1));
            }
            if b <= 0.0 {
                return Err(format!("bound {} ({b}) is not positive", i + 1));
            }
            if i > 0 && b <= bounds[i - 1] {
                return Err(format!(
                    "bound {} ({b}) is not greater than bound {} ({}): bounds must be strictly increasing",
                    i + 1,
                    i,
                    bounds[i - 1]
                ));
            }
        }
        Ok(Buckets {
            bounds: bounds.into(),
            // `as` saturates: bounds above u64::MAX become u64::MAX.
            thresholds: bounds.iter().map(|&b| b.floor() as u64).collect(),
        })
    }

    /// Parses comma-separated numbers (blanks allowed around each); `Err`
    /// says what is wrong.
    pub fn parse(text: &str) -> Result<Buckets, String> {
        if text.trim().is_empty() {
            return Err("the value is empty".to_owned());
        }
        let mut bounds = Vec::new();
        for (i, piece) in text.split(',').enumerate() {
            let piece = piece.trim();
            if piece.is_empty() {
                return Err(format!("bound {} is empty", i + 1));
            }
            let b: f64 = piece
                .parse()
                .map_err(|_| format!("bound {} ({piece:?}) is not a number", i + 1))?;
            bounds.push(b);
        }
        Buckets::new(&bounds)
    }

    /// The bounds, µs.
    pub fn bounds(&self) -> &[f64] {
        &self.bounds
    }

    /// The bucket of `value_us`: the index of the first bound it does not
    /// exceed, or `bounds().len()` for the overflow bucket.
    #[inline]
    pub fn index(&self, value_us: u64) -> usize {
        self.thresholds.partition_point(|&t| t < value_us)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_fall_in_the_first_bucket_they_do_not_exceed() {
        let b = Buckets::new(&[0.5, 10.0, 25.5, 100.0]).unwrap();
        for (v, i) in [
            (0, 0),
            (1, 1),
            (10, 1),
            (11, 2),
            (25, 2),
            (26, 3),
            (100, 3),
            (101, 4),
        ] {
            assert_eq!(b.index(v), i, "{v}");
        }
        assert_eq!(b.index(u64::MAX), 4);
    }

    #[test]
    fn bad_lists_say_why() {
        assert_eq!(
            Buckets::parse(" 5, 50 ,500.5").unwrap().bounds(),
            &[5.0, 50.0, 500.5]
        );
        for (bad, reason) in [
            ("10,,20", "bound 2 is empty"),
            ("10,abc", "not a number"),
            ("0,10", "not positive"),
            ("10,10", "strictly increasing"),
            ("10,inf", "finite"),
            (" ", "empty"),
        ] {
            let err = Buckets::parse(bad).unwrap_err();
            assert!(err.contains(reason), "{bad:?}: {err}");
        }
        let many = (1..=65)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(",");
        assert!(Buckets::parse(&many).unwrap_err().contains("at most 64"));
        assert_eq!(Buckets::default().bounds().len(), 19);
    }
}
