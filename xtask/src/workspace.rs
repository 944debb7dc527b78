//! The workspace as `cargo metadata` describes it: what the test and bundle tasks ask of it.

use std::path::Path;
use std::process::Command;

use crate::json::Json;

/// `cargo metadata --no-deps` of the workspace.
pub(crate) fn metadata(root: &Path) -> Result<Json, String> {
    let output = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(root)
        .args(["metadata", "--no-deps", "--format-version=1"])
        .output()
        .map_err(|e| format!("running cargo metadata: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Json::parse(&String::from_utf8_lossy(&output.stdout))
}

pub(crate) fn packages(metadata: &Json) -> &[Json] {
    match metadata.get("packages") {
        Json::Array(packages) => packages,
        _ => &[],
    }
}
