//! Installing the pinned tools and KaTeX's assets, only where missing, and
//! for the browser check, Debian's chromium.

use crate::{Failure, capture, root, run, step};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// mdBook and its KaTeX preprocessor, at the versions the book is built
/// with (mdbook-katex 0.9 does not work with mdBook 0.5).
pub const TOOLS: [(&str, &str); 2] =
    [("mdbook", "0.5.4"), ("mdbook-katex", "0.10.0")];

/// The KaTeX release whose CSS matches mdbook-katex 0.10.0's prerendered HTML.
pub const KATEX: &str = "0.16.4";

/// The npm packages of package.json, at the versions package-lock.json
/// pins: KaTeX's stylesheet and fonts for the book, and playwright-core,
/// which drives Debian's chromium in the browser check (it downloads no
/// browser of its own).
pub const NODE_PACKAGES: [(&str, &str); 2] =
    [("katex", KATEX), ("playwright-core", "1.65.1")];

/// Everything the build needs: the tools, the npm packages and the KaTeX
/// assets. (The browser check's chromium is installed by [`chromium`],
/// which only `cargo xtask test` needs.)
pub fn all() -> Result<(), Failure> {
    for (tool, version) in TOOLS {
        tool_at(tool, version)?;
    }
    let root = root();
    node_packages(&root)?;
    katex_assets(&root)?;
    kjv_text(&root)
}

/// The version of the npm package `name` installed under `root`, if any.
fn installed_node_package(root: &Path, name: &str) -> Option<String> {
    let manifest = fs::read_to_string(
        root.join("node_modules").join(name).join("package.json"),
    )
    .ok()?;
    let at = manifest.find("\"version\"")?;
    let rest = &manifest[at + "\"version\"".len()..];
    let start = rest.find('"')? + 1;
    let len = rest[start..].find('"')?;
    Some(rest[start..start + len].to_string())
}

/// `npm ci` (exactly what package-lock.json pins, no install scripts) when
/// a package of [`NODE_PACKAGES`] is missing or at another version.
pub fn node_packages(root: &Path) -> Result<(), Failure> {
    let stale = || {
        NODE_PACKAGES.iter().any(|(name, version)| {
            installed_node_package(root, name).as_deref() != Some(version)
        })
    };
    if !stale() {
        return Ok(());
    }
    let names: Vec<String> = NODE_PACKAGES
        .iter()
        .map(|(n, v)| format!("{n}@{v}"))
        .collect();
    step(&format!("installing {} (npm ci)", names.join(", ")));
    run(
        "npm",
        &["ci", "--ignore-scripts", "--no-audit", "--no-fund"],
        root,
    )
    .map_err(|Failure(why)| {
        Failure(format!(
            "{why}\nKaTeX's stylesheet and the browser check's driver come \
                 from npm; install Node.js (20 or newer) and npm, then run \
                 `cargo xtask setup` again"
        ))
    })?;
    if stale() {
        return Err(Failure(format!(
            "after npm ci, node_modules does not hold {}; package.json and \
             package-lock.json must pin these versions",
            names.join(", ")
        )));
    }
    Ok(())
}

/// The chromium the browser check drives: `$CHROMIUM` if set, else
/// `chromium` on the PATH, else Debian's package, installed here with
/// apt-get (as root; `apt-get update` first if the package is not found).
pub fn chromium() -> Result<PathBuf, Failure> {
    if let Some(path) = std::env::var_os("CHROMIUM") {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(Failure(format!(
                "CHROMIUM={} is not a file",
                path.display()
            )))
        };
    }
    if let Some(found) = on_path("chromium") {
        return Ok(found);
    }
    let advice = "the browser check needs Chromium: install Debian's package \
                  (`sudo apt-get install chromium`), or set CHROMIUM to a \
                  Chromium or Chrome binary, and run the command again";
    if capture("id", &["-u"]).as_deref().map(str::trim) != Some("0") {
        return Err(Failure(format!(
            "chromium is not installed, and {advice}"
        )));
    }
    if on_path("apt-get").is_none() {
        return Err(Failure(format!(
            "chromium is not installed and there is no apt-get here; {advice}"
        )));
    }
    step("installing Debian's chromium for the browser check (apt-get, once)");
    let apt = |args: &[&str]| -> Result<(), Failure> {
        let status = Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .map_err(|e| Failure(format!("could not start apt-get: {e}")))?;
        if status.success() {
            Ok(())
        } else {
            Err(Failure(format!(
                "`apt-get {}` failed ({status})",
                args.join(" ")
            )))
        }
    };
    let install = ["install", "-y", "chromium", "fonts-dejavu-core"];
    let installed = apt(&install).or_else(|_| {
        step("apt-get update, then the install again");
        apt(&["update"])?;
        apt(&install)
    });
    match (installed, on_path("chromium")) {
        (Ok(()), Some(found)) => Ok(found),
        (Err(Failure(why)), _) => Err(Failure(format!(
            "{why}\ncould not install chromium; {advice}"
        ))),
        (Ok(()), None) => Err(Failure(format!(
            "apt-get installed chromium, but `chromium` is not on the PATH; \
             {advice}"
        ))),
    }
}

/// The first `name` in the directories of PATH.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
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
    node_packages(root)?;
    let dist = root.join("node_modules/katex/dist");
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

/// Where the language-model study's text lives, from the workspace root.
pub const KJV_PATH: &str = "target/text/kjv.txt";
/// The text's size in bytes and FNV-1a 64 hash, so that another text (a
/// newer package, another line width) is a clear error, not a new result.
pub const KJV_BYTES: usize = 4_298_239;
pub const KJV_FNV: u64 = 0x21be_438c_ea80_82f0;

/// The King James Bible as Debian's `bible-kjv` prints it, written once
/// to [`KJV_PATH`]: `apt-get download bible-kjv bible-kjv-text` (no root
/// needed), both unpacked with `dpkg-deb -x`, then the package's `bible`
/// program prints every verse from Genesis 1:1 to Revelation 22:21 at its
/// default width of 79 columns.
pub fn kjv_text(root: &Path) -> Result<(), Failure> {
    let text = root.join(KJV_PATH);
    let check = |bytes: &[u8]| -> Result<(), Failure> {
        let hash = crate::mutants::content_hash(bytes);
        if bytes.len() == KJV_BYTES && hash == KJV_FNV {
            return Ok(());
        }
        Err(Failure(format!(
            "{} holds {} bytes with FNV-1a {hash:016x}, not the recorded \
             {KJV_BYTES} bytes with {KJV_FNV:016x}: another text than the \
             one the language-model study was trained on; delete it and run \
             `cargo xtask setup` again, or retrain with `cargo xtask lm`",
            text.display(),
            bytes.len()
        )))
    };
    if let Ok(bytes) = fs::read(&text) {
        return check(&bytes);
    }
    step(
        "the King James Bible from Debian's bible-kjv (apt-get download, once)",
    );
    let work = root.join("target/text/bible-kjv");
    let _ = fs::remove_dir_all(&work);
    fs::create_dir_all(&work)?;
    run(
        "apt-get",
        &["download", "bible-kjv", "bible-kjv-text"],
        &work,
    )
    .map_err(|Failure(why)| {
        Failure(format!(
            "{why}\nthe language-model study reads the King James Bible from \
             Debian's packages bible-kjv and bible-kjv-text; on a system \
             without apt-get, place the text at {KJV_PATH}"
        ))
    })?;
    for deb in fs::read_dir(&work)? {
        let deb = deb?.path();
        if deb.extension().is_some_and(|e| e == "deb") {
            let deb = deb.to_string_lossy().into_owned();
            run("dpkg-deb", &["-x", &deb, "unpacked"], &work)?;
        }
    }
    let unpacked = work.join("unpacked");
    let out = Command::new(unpacked.join("usr/bin/bible"))
        .args(["-l79", "-p", "usr/lib", "Gen1:1-Rev22:21"])
        .env_remove("COLUMNS")
        .current_dir(&unpacked)
        .output()
        .map_err(|e| Failure(format!("could not start `bible`: {e}")))?;
    if !out.status.success() {
        return Err(Failure(format!(
            "`bible` failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    check(&out.stdout)?;
    fs::write(&text, &out.stdout)?;
    let _ = fs::remove_dir_all(&work);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_json_and_its_lockfile_pin_the_node_packages() {
        let root = root();
        let manifest = fs::read_to_string(root.join("package.json")).unwrap();
        let lock = fs::read_to_string(root.join("package-lock.json")).unwrap();
        for (name, version) in NODE_PACKAGES {
            assert!(
                manifest.contains(&format!("\"{name}\": \"{version}\"")),
                "package.json must pin {name} to exactly {version}"
            );
            let entry = format!(
                "\"node_modules/{name}\": {{\n      \"version\": \"{version}\""
            );
            assert!(
                lock.contains(&entry),
                "package-lock.json: {name}@{version}"
            );
        }
    }

    /// The text's size and hash are written twice, here for the setup that
    /// installs the text and in the listings that read it; the two must
    /// agree, or setup accepts a text the study refuses.
    #[test]
    fn setup_and_the_language_model_study_record_the_same_text() {
        let listings =
            fs::read_to_string(root().join("listings/src/trainers/lm/text.rs"))
                .unwrap();
        let value = |name: &str| -> String {
            let line = listings
                .lines()
                .find(|l| l.starts_with(&format!("pub const {name}:")))
                .unwrap_or_else(|| panic!("text.rs defines no {name}"));
            let (_, rhs) = line.split_once('=').unwrap();
            rhs.trim().trim_end_matches(';').replace('_', "")
        };
        assert_eq!(value("KJV_BYTES"), KJV_BYTES.to_string());
        assert_eq!(value("KJV_FNV"), format!("0x{KJV_FNV:016x}"));
    }
}
