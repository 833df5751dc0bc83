//! The latency histograms' bucket bounds: the defaults and the one parser of
//! `NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US` ([`env::HISTOGRAM_BUCKETS_US`](crate::env::HISTOGRAM_BUCKETS_US)),
//! shared by every exporter that has histograms (Prometheus, multi-process
//! Prometheus, OTLP) and by the benchmarks, so their buckets are the same series.

use core::fmt;

/// The default upper bounds of `agent_xfer_time_us` and `agent_xfer_post_time_us`,
/// in microseconds: 1-2.5-5 steps from 10 µs to 1 s, then 5 s and 10 s. These
/// are NIXL 1.5.1's own plug-in's bounds (it has no 2.5 s bound), so the
/// buckets of the two plug-ins are the same series.
pub const DEFAULT_BUCKETS_US: [f64; 18] = [
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
    5_000_000.0,
    10_000_000.0,
];

/// The most bounds a list may have (each bound is one series per histogram
/// and agent).
pub const MAX_BUCKETS: usize = 64;

/// What a bucket list may be, as error messages quote it (without the
/// exporter's words about its overflow bucket).
pub const BUCKETS_ACCEPTED: &str =
    "comma-separated, strictly increasing, positive, finite microsecond bounds such as 10,100,1000";

/// Why a list of histogram bounds cannot be used ([`Buckets::new`],
/// [`Buckets::parse`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum BucketsError {
    /// The list is empty.
    Empty,
    /// More than [`MAX_BUCKETS`] bounds.
    TooMany {
        /// How many were given.
        given: usize,
    },
    /// A bound is infinite or NaN.
    NotFinite {
        /// The bound's position, from 1.
        position: usize,
        /// The bound.
        bound: f64,
    },
    /// A bound is zero or negative.
    NotPositive {
        /// The bound's position, from 1.
        position: usize,
        /// The bound.
        bound: f64,
    },
    /// A bound is not greater than the one before it.
    NotIncreasing {
        /// The bound's position, from 1.
        position: usize,
        /// The bound.
        bound: f64,
        /// The bound before it.
        previous: f64,
    },
    /// The text to parse is empty or blank.
    EmptyText,
    /// A piece between commas is empty or blank.
    EmptyBound {
        /// The bound's position, from 1.
        position: usize,
    },
    /// A piece between commas is not a number.
    NotANumber {
        /// The bound's position, from 1.
        position: usize,
        /// The piece, without blanks around it.
        text: String,
    },
}

impl fmt::Display for BucketsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BucketsError::Empty => f.write_str("no bounds given"),
            BucketsError::TooMany { given } => {
                write!(f, "{given} bounds given, at most {MAX_BUCKETS} are allowed")
            }
            BucketsError::NotFinite { position, bound } => {
                write!(f, "bound {position} ({bound}) is not a finite number")
            }
            BucketsError::NotPositive { position, bound } => {
                write!(f, "bound {position} ({bound}) is not positive")
            }
            BucketsError::NotIncreasing {
                position,
                bound,
                previous,
            } => write!(
                f,
                "bound {position} ({bound}) is not greater than bound {} ({previous}): bounds must be strictly increasing",
                position - 1
            ),
            BucketsError::EmptyText => f.write_str("the value is empty"),
            BucketsError::EmptyBound { position } => write!(f, "bound {position} is empty"),
            BucketsError::NotANumber { position, text } => {
                write!(f, "bound {position} ({text:?}) is not a number")
            }
        }
    }
}

impl std::error::Error for BucketsError {}

/// Upper bounds of a latency histogram, in microseconds, strictly increasing,
/// without the implicit overflow (`+Inf`) bucket.
#[derive(Clone, PartialEq)]
pub struct Buckets {
    bounds: Box<[f64]>,
    /// `floor(bound)` as an integer: an integer value `v` is `<= bound` exactly
    /// when it is `<= floor(bound)`, so events (integer µs) are bucketed with
    /// integer comparisons.
    thresholds: Box<[u64]>,
}

impl fmt::Debug for Buckets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.bounds.iter()).finish()
    }
}

impl Default for Buckets {
    /// [`DEFAULT_BUCKETS_US`].
    fn default() -> Self {
        Buckets::new(&DEFAULT_BUCKETS_US).expect("the default buckets are valid")
    }
}

impl Buckets {
    /// Checks and keeps `bounds`: at least one, at most [`MAX_BUCKETS`], each
    /// finite and positive, strictly increasing. `Err` says what is wrong.
    pub fn new(bounds: &[f64]) -> Result<Buckets, BucketsError> {
        if bounds.is_empty() {
            return Err(BucketsError::Empty);
        }
        if bounds.len() > MAX_BUCKETS {
            return Err(BucketsError::TooMany {
                given: bounds.len(),
            });
        }
        for (i, &bound) in bounds.iter().enumerate() {
            let position = i + 1;
            if !bound.is_finite() {
                return Err(BucketsError::NotFinite { position, bound });
            }
            if bound <= 0.0 {
                return Err(BucketsError::NotPositive { position, bound });
            }
            if i > 0 && bound <= bounds[i - 1] {
                return Err(BucketsError::NotIncreasing {
                    position,
                    bound,
                    previous: bounds[i - 1],
                });
            }
        }
        let thresholds = bounds
            .iter()
            // `as` saturates: bounds above u64::MAX become u64::MAX.
            .map(|&b| b.floor() as u64)
            .collect();
        Ok(Buckets {
            bounds: bounds.into(),
            thresholds,
        })
    }

    /// Parses the `NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US` syntax: comma-separated
    /// numbers, blanks allowed around each. A blank text is an error here;
    /// whether a blank variable means the defaults is the reader's rule.
    pub fn parse(text: &str) -> Result<Buckets, BucketsError> {
        if text.trim().is_empty() {
            return Err(BucketsError::EmptyText);
        }
        let mut bounds = Vec::new();
        for (i, piece) in text.split(',').enumerate() {
            let position = i + 1;
            let piece = piece.trim();
            if piece.is_empty() {
                return Err(BucketsError::EmptyBound { position });
            }
            let bound: f64 = piece.parse().map_err(|_| BucketsError::NotANumber {
                position,
                text: piece.to_owned(),
            })?;
            bounds.push(bound);
        }
        Buckets::new(&bounds)
    }

    /// The bounds, µs, without the overflow bucket.
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
    fn lists_parse_or_say_why_not() {
        let b = Buckets::parse(" 5, 50 ,500.5").unwrap();
        assert_eq!(b.bounds(), &[5.0, 50.0, 500.5]);
        for (bad, reason) in [
            ("10,,20", "bound 2 is empty"),
            (",", "bound 1 is empty"),
            ("10,abc", "bound 2 (\"abc\") is not a number"),
            ("0,10", "not positive"),
            ("-5", "not positive"),
            ("10,10", "strictly increasing"),
            ("10,5", "strictly increasing"),
            ("10,inf", "finite"),
            ("NaN", "finite"),
            (" ", "the value is empty"),
        ] {
            let err = Buckets::parse(bad).unwrap_err();
            assert!(err.to_string().contains(reason), "{bad:?}: {err}");
        }
        let many = (1..=65)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(",");
        let err = Buckets::parse(&many).unwrap_err();
        assert_eq!(err, BucketsError::TooMany { given: 65 });
        assert_eq!(err.to_string(), "65 bounds given, at most 64 are allowed");
    }

    #[test]
    fn bucket_errors_are_typed() {
        assert_eq!(Buckets::new(&[]).unwrap_err(), BucketsError::Empty);
        assert_eq!(
            Buckets::new(&[1.0, f64::INFINITY]).unwrap_err(),
            BucketsError::NotFinite {
                position: 2,
                bound: f64::INFINITY
            }
        );
        assert_eq!(
            Buckets::new(&[5.0, 5.0]).unwrap_err().to_string(),
            "bound 2 (5) is not greater than bound 1 (5): bounds must be strictly increasing"
        );
    }

    #[test]
    fn the_defaults_are_nixls_eighteen_bounds() {
        let b = Buckets::default();
        assert_eq!(b.bounds(), &DEFAULT_BUCKETS_US);
        assert_eq!(b.bounds().first(), Some(&10.0));
        assert_eq!(b.bounds().last(), Some(&10_000_000.0));
        assert!(!b.bounds().contains(&2_500_000.0));
    }

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
            (u64::MAX, 4),
        ] {
            assert_eq!(b.index(v), i, "{v}");
        }
        let huge = Buckets::new(&[1e30]).unwrap();
        assert_eq!(huge.index(u64::MAX), 0);
    }
}
