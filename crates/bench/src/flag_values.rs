//! The `--flag value` command lines of the suite's smaller tools.

use anyhow::{bail, Result};

/// Pairs each `--flag` of `args` (the arguments after the program's name) with the
/// value that follows it; a flag left without a value is an error that names it.
pub fn flag_values(args: impl IntoIterator<Item = String>) -> Result<Vec<(String, String)>> {
    let mut args = args.into_iter();
    let mut pairs = Vec::new();
    while let Some(flag) = args.next() {
        let Some(value) = args.next() else {
            bail!("{flag} needs a value");
        };
        pairs.push((flag, value));
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn flags_pair_with_the_values_that_follow_them() {
        let pairs = flag_values(strings(&["--rings", "3", "--seconds", "10"])).unwrap();
        assert_eq!(
            pairs,
            [
                ("--rings".to_owned(), "3".to_owned()),
                ("--seconds".to_owned(), "10".to_owned())
            ]
        );
        assert!(flag_values(strings(&[])).unwrap().is_empty());
    }

    #[test]
    fn a_flag_without_a_value_is_named() {
        let error = flag_values(strings(&["--rings", "3", "--seconds"])).unwrap_err();
        assert_eq!(error.to_string(), "--seconds needs a value");
    }
}
