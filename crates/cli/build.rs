//! Sets `NIXL_TELEMETRY_VERSION_LINE` (version and commit) for `--version`.

fn main() {
    nixl_telemetry_build_info::emit();
}
