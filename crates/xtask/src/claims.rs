//! The claim marks' second check: every test a chapter's `{{#claim}}`
//! names must be among the tests `cargo test` runs. The build already
//! fails on a name no `#[test]` defines; this catches a test that exists
//! in the sources but is not compiled or not run (a module behind a
//! `cfg`, a file no crate declares, a name in the wrong workspace).

use crate::{Failure, step};
use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::process::Command;

/// Every test named by a claim mark in the chapters under `root/src`
/// that `list`, the output of `cargo test -- --list`, does not hold, as
/// `src/FILE: NAME`.
pub fn unrun(root: &Path, list: &str) -> Result<Vec<String>, Failure> {
    let listed: BTreeSet<&str> = list
        .lines()
        .filter_map(|l| l.strip_suffix(": test"))
        .filter(|l| !l.contains(" - ")) // doc tests: "file - item (line n)"
        .map(|l| l.rsplit("::").next().unwrap_or(l))
        .collect();
    let mut missing = Vec::new();
    for path in crate::links::all_files(&root.join("src"))? {
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let text = fs::read_to_string(&path)?;
        let rel = path.strip_prefix(root).unwrap_or(&path).display();
        for name in mdbook_listings::claim::marked_tests(&text) {
            let function = mdbook_listings::claim::function_name(&name);
            if !listed.contains(function) {
                missing.push(format!("{rel}: {name}"));
            }
        }
    }
    missing.dedup();
    Ok(missing)
}

/// Fail if a marked test is not among those `cargo test --workspace`
/// runs, as `cargo test --workspace -- --list` lists them.
pub fn check_ran(root: &Path) -> Result<(), Failure> {
    step("every test a claim mark names is among the tests cargo test ran");
    let out = Command::new("cargo")
        .args(["test", "--workspace", "--quiet", "--", "--list"])
        .current_dir(root)
        .output()
        .map_err(|e| Failure(format!("could not start cargo: {e}")))?;
    if !out.status.success() {
        return Err(Failure(format!(
            "`cargo test --workspace -- --list` failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    let missing = unrun(root, &String::from_utf8_lossy(&out.stdout))?;
    if missing.is_empty() {
        Ok(())
    } else {
        Err(Failure(format!(
            "claim marks name tests that cargo test did not run:\n{}",
            missing.join("\n")
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marked_tests_missing_from_the_list_are_reported() {
        let root = std::env::temp_dir().join("xtask-claims-unrun");
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join("src/part")).unwrap();
        fs::write(
            root.join("src/part/one.md"),
            "Rows sum to one. {{#claim rows_sum gone}}\n\
             ```\n{{#claim in_code}}\n```\n",
        )
        .unwrap();
        let list = "m3::attention::tests::rows_sum: test\n\
                    src/lib.rs - gone (line 3): test\n\
                    other: test\n\n2 tests, 0 benchmarks\n";
        assert_eq!(unrun(&root, list).unwrap(), ["src/part/one.md: gone"]);
        fs::remove_dir_all(&root).unwrap();
    }
}
