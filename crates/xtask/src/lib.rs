//! The library behind `cargo xtask`: tool setup (`setup`), the book build
//! (`book`) and its checks, by what they read: the chapters' Markdown
//! (`markdown`), each built page (`page`, over `html`'s reading of tags),
//! the links between pages (`links`), what a reader sees in a browser
//! (`browser`), and whether each claim's tests ran (`claims`). A library
//! so that the checks' own tests can call it.

pub mod book;
pub mod browser;
pub mod claims;
pub mod html;
pub mod links;
pub mod markdown;
pub mod mutants;
pub mod notation;
pub mod page;
pub mod prose;
pub mod record;
pub mod search;
pub mod setup;

use std::path::{Path, PathBuf};
use std::process::Command;

/// Why a step failed, in words for the person at the terminal.
#[derive(Debug)]
pub struct Failure(pub String);

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Failure(e.to_string())
    }
}

/// The workspace root (the folder with book.toml). `cargo run` and
/// `cargo test` set CARGO_MANIFEST_DIR when they start us, which stays right
/// even if this binary was built from another checkout sharing the target
/// folder; the path compiled in is the fallback.
pub fn root() -> PathBuf {
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    manifest.join("../..").canonicalize().unwrap_or_else(|e| {
        panic!("the workspace root {} exists: {e}", manifest.display())
    })
}

/// Announce a step.
pub fn step(what: &str) {
    println!("\n==> {what}");
}

/// Run a command in `dir`, letting it print, and fail if it fails.
pub fn run(program: &str, args: &[&str], dir: &Path) -> Result<(), Failure> {
    let status = Command::new(program)
        .args(args)
        .current_dir(dir)
        .status()
        .map_err(|e| Failure(format!("could not start `{program}`: {e}")))?;
    if status.success() {
        Ok(())
    } else {
        Err(Failure(format!(
            "`{program} {}` failed ({status})",
            args.join(" ")
        )))
    }
}

/// Run a command in `dir` with its output captured, then print it through
/// Rust's `print!` (so a test harness captures it too), and fail if the
/// command failed.
pub fn run_echo(
    program: &str,
    args: &[&str],
    dir: &Path,
) -> Result<(), Failure> {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|e| Failure(format!("could not start `{program}`: {e}")))?;
    print!("{}", String::from_utf8_lossy(&out.stdout));
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    if out.status.success() {
        Ok(())
    } else {
        Err(Failure(format!(
            "`{program} {}` failed ({})",
            args.join(" "),
            out.status
        )))
    }
}

/// Run a command and return what it printed on stdout, or None if it could
/// not start or failed.
pub fn capture(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}
