//! Builds the C++ adapters, one shared library per generation of NIXL's
//! exporter interface, with the C++ compiler the `cc` crate finds (`CXX`, else
//! `c++`/`g++`), into `$OUT_DIR/adapters/<generation>/nixl_adapter.so`; the
//! crate reads that directory from `NIXL_ADAPTERS_BUILD_DIR`. Also the
//! benchmark's driver (`cpp/bench/adapter_bench.cpp`), once as NIXL 1.5 and
//! once as NIXL 1.3/1.4, into `$OUT_DIR/bench/adapter_bench_{5,3}`
//! (`NIXL_ADAPTERS_BENCH_DIR`).
//!
//! The compiler must be GCC's (or one using libstdc++ with its C++11 string
//! ABI): NIXL's wheels are built so, and the adapters share `std::string` and
//! `std::unique_ptr` objects with NIXL.
//!
//! The generation table is the crate's own (`src/generations.rs`): each
//! adapter's source gets its generation's id, releases, API version, event
//! size and exporter functions as macros (`NIXL_ADAPTER_*`), so the C++ holds
//! no copy of them.
//! `std::unique_ptr` objects with NIXL. `NIXL_ADAPTERS_CXX` names it when the
//! target's C++ compiler is another (cargo-zigbuild sets Zig's, which uses libc++).
//!
//! `NIXL_ADAPTERS_GLIBC_2_28_LINKER` (scripts/build-wheel.sh) builds adapters
//! that run on glibc 2.28, as NIXL's `manylinux_2_28` wheels do: the sources are
//! compiled with the GCC above, with `cpp/glibc_2_28` first on the include path
//! and `cpp/glibc_2_28/clockwait.cpp` added (the two glibc features newer than
//! 2.28 that libstdc++'s headers reach for), then linked by the command that
//! variable names (a `cc` linking against glibc 2.28, e.g. Zig's
//! `zig cc -target x86_64-linux-gnu.2.28`) with GCC's own libstdc++ and libgcc_s.

use std::path::PathBuf;
use std::process::Command;

// Only the table and its types are used here.
#[allow(dead_code)]
#[path = "src/generations.rs"]
mod generations;

use generations::GENERATIONS;

/// The sources every adapter links.
const SHARED: [&str; 6] = [
    "adapter.cpp",
    "forwarder.cpp",
    "our_plugin.cpp",
    "host_interface.cpp",
    "event_names.cpp",
    "nixl_log.cpp",
];

fn main() {
    nixl_telemetry_build_info::emit();
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let cpp = manifest.join("cpp");
    let include = manifest.join("../../include");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it")).join("adapters");
    println!("cargo:rerun-if-changed={}", cpp.display());
    println!(
        "cargo:rerun-if-changed={}",
        include.join("nixl_telemetry_plugin.h").display()
    );
    println!("cargo:rerun-if-env-changed=CXX");
    println!("cargo:rerun-if-env-changed=NIXL_ADAPTERS_CXX");
    println!("cargo:rerun-if-env-changed=NIXL_ADAPTERS_GLIBC_2_28_LINKER");

    let compiler = match std::env::var_os("NIXL_ADAPTERS_CXX") {
        Some(cxx) => cc::Build::new()
            .cpp(true)
            .cargo_metadata(false)
            .cargo_warnings(false)
            .compiler(cxx)
            .get_compiler(),
        None => cc::Build::new()
            .cpp(true)
            .cargo_metadata(false)
            .cargo_warnings(false)
            .get_compiler(),
    };
    let portable_linker = std::env::var_os("NIXL_ADAPTERS_GLIBC_2_28_LINKER");
    // Every C++ compilation: optimised, NIXL's string ABI, our headers.
    let cxx = || {
        let mut command = compiler.to_command();
        command
            .args(["-std=c++17", "-O2", "-g1", "-Wall", "-Wextra"])
            // NIXL's wheels use libstdc++'s C++11 ABI (std::__cxx11::basic_string).
            .arg("-D_GLIBCXX_USE_CXX11_ABI=1")
            .arg("-I")
            .arg(&include);
        command
    };
    let version = std::env::var("CARGO_PKG_VERSION").expect("cargo sets it");
    println!(
        "cargo:rerun-if-changed={}",
        manifest.join("src/generations.rs").display()
    );
    for generation in &GENERATIONS {
        let dir = out.join(generation.id);
        std::fs::create_dir_all(&dir).expect("create the output directory");
        let library = dir.join("nixl_adapter.so");
        if let Some(linker) = &portable_linker {
            let defines = defines(generation, &version);
            build_for_glibc_2_28(
                &cxx,
                &compiler,
                linker,
                &cpp,
                generation.source,
                &defines,
                &library,
            );
            continue;
        }
        let mut command = cxx();
        command
            .args([
                "-fPIC",
                "-shared",
                "-fvisibility=hidden",
                "-fvisibility-inlines-hidden",
            ])
            .args(defines(generation, &version))
            .arg(cpp.join(generation.source));
        command.args(SHARED.iter().map(|file| cpp.join(file)));
        command
            .arg(format!(
                "-Wl,--version-script={}",
                cpp.join("exports.map").display()
            ))
            .args(["-Wl,--no-undefined", "-pthread", "-ldl", "-o"])
            .arg(&library);
        run(
            &mut command,
            generation.id,
            &compiler.path().display().to_string(),
        );
    }
    println!("cargo:rustc-env=NIXL_ADAPTERS_BUILD_DIR={}", out.display());

    let bench = out.with_file_name("bench");
    std::fs::create_dir_all(&bench).expect("create the output directory");
    for functions in [5, 3] {
        let mut command = compiler.to_command();
        command
            .args([
                "-std=c++17",
                "-O2",
                "-g1",
                "-D_GLIBCXX_USE_CXX11_ABI=1",
                "-Wall",
                "-Wextra",
            ])
            .arg(format!("-DBENCH_EXPORTER_FUNCTIONS={functions}"))
            .arg("-I")
            .arg(&include)
            .arg(cpp.join("bench/adapter_bench.cpp"))
            .arg(cpp.join("event_names.cpp"))
            .args(["-rdynamic", "-ldl", "-o"])
            .arg(bench.join(format!("adapter_bench_{functions}")));
        run(
            &mut command,
            "benchmark driver",
            &compiler.path().display().to_string(),
        );
    }
    println!(
        "cargo:rustc-env=NIXL_ADAPTERS_BENCH_DIR={}",
        bench.display()
    );
}

/// One adapter for glibc 2.28: each source compiled by `cxx` into an object
/// beside `library`, then linked by `linker` (see the file's documentation).
fn build_for_glibc_2_28(
    cxx: &dyn Fn() -> Command,
    compiler: &cc::Tool,
    linker: &std::ffi::OsStr,
    cpp: &std::path::Path,
    source: &str,
    defines: &[String],
    library: &std::path::Path,
) {
    let compat = cpp.join("glibc_2_28");
    let sources = std::iter::once(cpp.join(source))
        .chain(SHARED.iter().map(|file| cpp.join(file)))
        .chain(std::iter::once(compat.join("clockwait.cpp")));
    let mut objects = Vec::new();
    for file in sources {
        let stem = file.file_stem().expect("a source file").to_owned();
        let object = library.with_file_name(stem).with_extension("o");
        let mut command = cxx();
        command
            .arg("-isystem")
            .arg(&compat)
            .args([
                "-fPIC",
                "-fvisibility=hidden",
                "-fvisibility-inlines-hidden",
            ])
            .args(defines)
            .arg("-c")
            .arg(&file)
            .arg("-o")
            .arg(&object);
        run(&mut command, source, &compiler.path().display().to_string());
        objects.push(object);
    }
    // GCC's own libstdc++ and libgcc_s, by path: a linker of another toolchain
    // would take `-lstdc++` for its own C++ library.
    let gcc_file = |name: &str| {
        let output = compiler
            .to_command()
            .arg(format!("-print-file-name={name}"))
            .output()
            .expect("ask the C++ compiler where its libraries are");
        PathBuf::from(String::from_utf8_lossy(&output.stdout).trim())
    };
    let mut command = Command::new(linker);
    command
        .arg("-shared")
        .args(&objects)
        .arg(gcc_file("libstdc++.so"))
        .arg(gcc_file("libgcc_s.so.1"))
        .arg(format!(
            "-Wl,--version-script={}",
            cpp.join("exports.map").display()
        ))
        .args(["-Wl,--no-undefined", "-pthread", "-ldl", "-o"])
        .arg(library);
    run(&mut command, source, &linker.to_string_lossy());
}

/// The macros a generation's adapter is compiled with: its entry in the
/// generation table, so the C++ holds no copy of it.
fn defines(generation: &generations::Generation, version: &str) -> Vec<String> {
    vec![
        format!("-DNIXL_TELEMETRY_VERSION=\"{version}\""),
        format!("-DNIXL_ADAPTER_GENERATION=\"{}\"", generation.id),
        format!("-DNIXL_ADAPTER_RELEASES=\"{}\"", generation.release_range()),
        format!("-DNIXL_ADAPTER_API_VERSION={}", generation.api_version),
        format!("-DNIXL_ADAPTER_EVENT_SIZE={}", generation.events.size()),
        format!(
            "-DNIXL_ADAPTER_EXPORTER_FUNCTIONS={}",
            generation.exporter_functions
        ),
    ]
}

fn run(command: &mut Command, generation: &str, compiler: &str) {
    let output = match command.output() {
        Ok(output) => output,
        Err(e) => panic!(
            "cannot run the C++ compiler {compiler} to build the NIXL adapters ({e}); \
             install g++ (Debian/Ubuntu: apt-get install g++) or set CXX"
        ),
    };
    let stderr = String::from_utf8_lossy(&output.stderr);
    for line in stderr.lines().filter(|l| !l.trim().is_empty()) {
        println!("cargo:warning={line}");
    }
    assert!(
        output.status.success(),
        "building the NIXL adapter {generation} with {compiler} failed ({}):\n{stderr}",
        output.status
    );
}
