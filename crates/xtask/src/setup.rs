//! Installing the pinned tools and KaTeX's assets, only where missing.

use crate::{Failure, capture, root, run, step};
use std::fs;
use std::path::Path;

/// mdBook and its KaTeX preprocessor, at the versions the book is built
/// with (mdbook-katex 0.9 does not work with mdBook 0.5).
pub const TOOLS: [(&str, &str); 2] =
    [("mdbook", "0.5.4"), ("mdbook-katex", "0.10.0")];

/// The KaTeX release whose CSS matches mdbook-katex 0.10.0's prerendered HTML.
pub const KATEX: &str = "0.16.4";

/// Everything the build needs: the tools and the KaTeX assets.
pub fn all() -> Result<(), Failure> {
    for (tool, version) in TOOLS {
        tool_at(tool, version)?;
    }
    katex_assets(&root())
}

/// Install `tool` at `version` with `cargo install --locked` unless
/// `tool --version` already reports that version.
pub fn tool_at(tool: &str, version: &str) -> Result<(), Failure> {
    let found = capture(tool, &["--version"]);
    let reported = found.as_deref().and_then(|v| v.split_whitespace().last());
    if reported.map(|v| v.trim_start_matches('v')) == Some(version) {
        return Ok(());
    }
    step(&format!(
        "installing {tool} {version} (found: {}); this takes a few minutes once",
        reported.unwrap_or("none")
    ));
    run(
        "cargo",
        &["install", "--locked", tool, "--version", version],
        &root(),
    )
}

/// KaTeX's stylesheet and fonts in `src/katex/` (ignored by git), which
/// mdBook copies into the built book. They come from the npm package
/// `katex`, pinned in package.json and package-lock.json.
pub fn katex_assets(root: &Path) -> Result<(), Failure> {
    let target = root.join("src/katex");
    let stamp = target.join("VERSION");
    if fs::read_to_string(&stamp).ok().as_deref() == Some(KATEX) {
        return Ok(());
    }
    let dist = root.join("node_modules/katex/dist");
    if !dist.join("katex.min.css").exists() {
        step(&format!(
            "installing KaTeX {KATEX}'s CSS and fonts (npm ci)"
        ));
        run(
            "npm",
            &["ci", "--ignore-scripts", "--no-audit", "--no-fund"],
            root,
        )
        .map_err(|Failure(why)| {
            Failure(format!(
                "{why}\nKaTeX's stylesheet comes from npm; install Node.js and \
                 npm, then run `cargo xtask setup` again"
            ))
        })?;
    }
    let version =
        fs::read_to_string(root.join("node_modules/katex/package.json"))?;
    if !version.contains(&format!("\"version\": \"{KATEX}\"")) {
        return Err(Failure(format!(
            "node_modules/katex is not version {KATEX}; delete node_modules and \
             run `cargo xtask setup` again"
        )));
    }
    let _ = fs::remove_dir_all(&target);
    fs::create_dir_all(target.join("fonts"))?;
    fs::copy(dist.join("katex.min.css"), target.join("katex.min.css"))?;
    for font in fs::read_dir(dist.join("fonts"))? {
        let font = font?.path();
        if let Some(name) = font.file_name() {
            fs::copy(&font, target.join("fonts").join(name))?;
        }
    }
    fs::write(&stamp, KATEX)?;
    Ok(())
}
