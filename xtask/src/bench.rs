//! `cargo xtask bench [LOGDIR]`: builds the GPU bundle and runs only its
//! benchmarks (`run.sh LOGDIR bench`), on a machine with a GPU and a Rust
//! toolchain. Without one, use `cargo xtask gpu-bundle` and run
//! `target/gpu-bundle/run.sh LOGDIR` on the GPU machine.

use std::path::Path;
use std::process::Command;

use crate::gpu_bundle;

pub fn run(root: &Path, args: &[String]) -> Result<(), String> {
    if args.len() > 1 {
        return Err("usage: cargo xtask bench [LOGDIR]".into());
    }
    let logs = args
        .first()
        .map(Into::into)
        .unwrap_or_else(|| root.join("target/bench-logs"));
    let bundle = gpu_bundle::build(root)?;
    for broken in &bundle.broken {
        eprintln!("xtask: warning: not built: {broken}");
    }
    let status = Command::new("bash")
        .arg(bundle.dir.join("run.sh"))
        .arg(&logs)
        .arg("bench")
        .status()
        .map_err(|e| format!("running run.sh: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "run.sh bench failed ({status}); logs in {}",
            std::path::PathBuf::from(&logs).display()
        ))
    }
}
