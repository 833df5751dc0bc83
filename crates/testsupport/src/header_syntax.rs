//! Compiling a source file against the workspace's public headers
//! (`include/`), syntax only, with every warning an error: how the tests check
//! that a header is valid C or C++ in each language standard a user may pick.

use std::path::Path;
use std::process::Command;

use crate::plugins::workspace_root;

/// Runs `compiler` (`cc`, `c++`) with `flags` (a `-std=`, `-pedantic`, …),
/// `-Wall -Wextra -Werror -fsyntax-only` and the headers' directory on
/// `source`. The error is the command and the compiler's diagnostics.
///
/// Panics if the compiler cannot be started (the tests need one).
pub fn check_header_syntax(compiler: &str, flags: &[&str], source: &Path) -> Result<(), String> {
    let out = Command::new(compiler)
        .args(flags)
        .args(["-Wall", "-Wextra", "-Werror", "-fsyntax-only", "-I"])
        .arg(workspace_root().join("include"))
        .arg(source)
        .output()
        .unwrap_or_else(|e| panic!("{compiler} could not be started: {e}"));
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{compiler} {} {}: {}",
            flags.join(" "),
            source.display(),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_warning_is_an_error_and_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.c");
        std::fs::write(
            &good,
            "#include \"nixl_telemetry_plugin.h\"\nint main(void) { return 0; }\n",
        )
        .unwrap();
        check_header_syntax("cc", &["-std=c11", "-pedantic"], &good).unwrap();
        let unused = dir.path().join("unused.c");
        std::fs::write(&unused, "int main(void) { int unused_local; return 0; }\n").unwrap();
        let error = check_header_syntax("cc", &["-std=c11"], &unused).unwrap_err();
        assert!(error.contains("unused_local"), "{error}");
        assert!(error.starts_with("cc -std=c11 "), "{error}");
    }
}
