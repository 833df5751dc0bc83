//! `nixl-telemetry-bench [--quick] [--json] [--only PART,...] [--out FILE]`
//! runs the comparison suite and prints a table (or one JSON object);
//! `nixl-telemetry-bench --callgrind N` runs the instruction-count loops.

use anyhow::{bail, Context, Result};
use nixl_telemetry_bench::{callgrind, run_suite, Part, SuitePlan};

const USAGE: &str =
    "usage: nixl-telemetry-bench [--quick] [--json] [--only ops,ring,pipeline,exporters,loop] [--out FILE]
       nixl-telemetry-bench --callgrind N";

fn main() -> Result<()> {
    let mut quick = false;
    let mut as_json = false;
    let mut parts: Vec<Part> = Part::ALL.to_vec();
    let mut out = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => quick = true,
            "--json" => as_json = true,
            "--only" => {
                let list = args.next().context("--only needs a list of parts")?;
                parts = list
                    .split(',')
                    .map(|p| Part::parse(p.trim()).with_context(|| format!("unknown part {p:?}")))
                    .collect::<Result<_>>()?;
            }
            "--out" => out = Some(args.next().context("--out needs a file")?),
            "--callgrind" => {
                let n = args
                    .next()
                    .context("--callgrind needs a count")?
                    .parse()
                    .context("--callgrind count")?;
                return callgrind::run(n);
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => bail!("unknown argument {other:?}\n{USAGE}"),
        }
    }
    let plan = if quick {
        SuitePlan::quick()
    } else {
        SuitePlan::full()
    };
    let report = run_suite(plan, &parts)?;
    let text = if as_json {
        serde_json::to_string_pretty(&report.json())? + "\n"
    } else {
        report.table()
    };
    print!("{text}");
    if let Some(path) = out {
        std::fs::write(&path, serde_json::to_string_pretty(&report.json())? + "\n")
            .with_context(|| format!("write {path}"))?;
    }
    Ok(())
}
