//! The record of a test run: `cargo xtask test` runs `cargo test
//! --workspace`, reads each test's outcome from libtest's own lines
//! (`test PATH ... ok`, `... FAILED`, `... ignored`, under cargo's
//! `Running unittests src/lib.rs (target/debug/deps/NAME-HASH)` for each
//! test binary), and writes them with the commit, date, machine and time
//! taken to `target/verification/record.tsv`. The book built next reads
//! it (named in `BOOK_TEST_RECORD`): each claim mark shows its tests'
//! results, and the verification report summarises the run.

use crate::{Failure, capture, step};
use mdbook_listings::verify::{Entry, Outcome, Record};
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// Where the record is written, under the workspace's `target/`.
pub fn path(root: &Path) -> PathBuf {
    root.join("target/verification/record.tsv")
}

/// The test binary a cargo `Running` line announces, as the record names
/// it: `listings:src/lib.rs`, `bad_inputs:tests/bad_inputs.rs`.
fn binary(line: &str) -> Option<String> {
    let rest = line.trim_start().strip_prefix("Running ")?;
    let (source, exe) = rest.rsplit_once(" (")?;
    let source = source.trim().trim_start_matches("unittests ").trim();
    let exe = exe.trim_end_matches(')');
    let file = exe.rsplit(['/', '\\']).next()?;
    let file = file.trim_end_matches(".exe");
    let name = file.rsplit_once('-').map_or(file, |(name, _)| name);
    Some(format!("{name}:{source}"))
}

/// Every test outcome in the combined output of `cargo test`, by binary.
/// Doc tests are left out: no claim mark names one.
pub fn parse(output: &str) -> Vec<Entry> {
    let mut target: Option<String> = None;
    let mut entries = Vec::new();
    for line in output.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("Running ") {
            target = binary(line);
            continue;
        }
        if trimmed.starts_with("Doc-tests ") {
            target = None;
            continue;
        }
        let Some(target) = &target else { continue };
        let Some(rest) = line.strip_prefix("test ") else {
            continue;
        };
        let Some((name, result)) = rest.rsplit_once(" ... ") else {
            continue;
        };
        let name = name.trim_end_matches(" - should panic").trim();
        let outcome = match result.trim() {
            "ok" => Outcome::Passed,
            "FAILED" => Outcome::Failed,
            r if r.starts_with("ignored") => Outcome::Ignored,
            _ => continue,
        };
        entries.push(Entry {
            outcome,
            target: target.clone(),
            path: name.to_string(),
        });
    }
    entries
}

/// The machine, as the committed data files name it: the processor's
/// model and how many logical CPUs it has.
pub fn machine() -> String {
    let info = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = info
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, m)| m.split_whitespace().collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    format!("{model} ({cpus} logical CPUs, {})", std::env::consts::OS)
}

/// The commit checked out in `root`, with a note if the work tree has
/// changes it does not hold.
pub fn commit(root: &Path) -> String {
    let dir = root.to_string_lossy().into_owned();
    let head = capture("git", &["-C", &dir, "rev-parse", "HEAD"])
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_string());
    let dirty = capture("git", &["-C", &dir, "status", "--porcelain"])
        .is_some_and(|s| !s.trim().is_empty());
    if dirty {
        format!("{head} (with uncommitted changes)")
    } else {
        head
    }
}

/// Run `command` in `root` through the shell, printing what is not a
/// passing or ignored test's line, and return everything it printed
/// (stderr and stdout in one stream, so that each test stays under the
/// binary cargo announced before it) and whether it succeeded.
fn run_streaming(
    command: &str,
    root: &Path,
) -> Result<(String, bool), Failure> {
    let mut child = Command::new("sh")
        .args(["-c", &format!("{command} 2>&1")])
        .current_dir(root)
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| Failure(format!("could not start `{command}`: {e}")))?;
    let mut output = String::new();
    if let Some(out) = child.stdout.take() {
        for line in BufReader::new(out).lines() {
            let line = line?;
            let quiet = line.starts_with("test ")
                && (line.ends_with(" ... ok") || line.contains(" ... ignored"));
            if !quiet && !line.trim().is_empty() {
                println!("{line}");
            }
            output.push_str(&line);
            output.push('\n');
        }
    }
    let status = child.wait()?;
    Ok((output, status.success()))
}

/// Minutes and seconds, as the record writes a time taken.
fn minutes(seconds: u64) -> String {
    format!("{} min {} s", seconds / 60, seconds % 60)
}

/// Run `cargo test --workspace` in `root`, print what failed and each
/// binary's summary, and write the record of every test's outcome. Fails
/// if a test failed (after writing the record).
pub fn run_tests(root: &Path) -> Result<PathBuf, Failure> {
    let command = "cargo test --workspace";
    step(&format!("{command} (each outcome recorded)"));
    let date = capture("date", &["-u", "+%Y-%m-%d %H:%M UTC"])
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown date".to_string());
    let started = Instant::now();
    let (output, success) = run_streaming(command, root)?;
    let seconds = started.elapsed().as_secs();
    let record = Record {
        commit: commit(root),
        date,
        machine: machine(),
        duration: format!("{} (compiling and running)", minutes(seconds)),
        command: command.to_string(),
        entries: parse(&output),
    };
    let path = path(root);
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    fs::write(&path, record.to_text())?;
    let (passed, failed, ignored) = record.counts();
    println!(
        "recorded {passed} passed, {failed} failed, {ignored} ignored in {}",
        path.strip_prefix(root).unwrap_or(&path).display()
    );
    if success {
        Ok(path)
    } else {
        Err(Failure(format!("`{command}` failed")))
    }
}

/// Fold a later run's outcomes into `record`: each replaces what the
/// record held for the same test of the same binary (the `ignored` of a
/// test that needs the built book), and a test it did not hold is added.
pub fn fold(record: &mut Record, later: Vec<Entry>) {
    for entry in later {
        match record
            .entries
            .iter_mut()
            .find(|e| e.target == entry.target && e.path == entry.path)
        {
            Some(held) => held.outcome = entry.outcome,
            None => record.entries.push(entry),
        }
    }
}

/// The checks' own tests, which need the built book (`cargo test
/// --package xtask -- --ignored`): run them and fold their outcomes into
/// the record at `path`, so that the book rebuilt from it shows them as
/// passed or failed rather than ignored. Fails if one failed (after
/// writing the record).
pub fn run_ignored(root: &Path, path: &Path) -> Result<(), Failure> {
    let command = "cargo test --package xtask -- --ignored";
    let text = fs::read_to_string(path)?;
    let mut record = Record::parse(&text).map_err(|e| {
        Failure(format!("the record {} is unreadable: {e}", path.display()))
    })?;
    let started = Instant::now();
    let (output, success) = run_streaming(command, root)?;
    fold(&mut record, parse(&output));
    record.command =
        format!("{}, then {command} after the build", record.command);
    record.duration = format!(
        "{} + {} (the checks' own tests)",
        record.duration,
        minutes(started.elapsed().as_secs())
    );
    fs::write(path, record.to_text())?;
    if success {
        Ok(())
    } else {
        Err(Failure(format!("`{command}` failed")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_later_run_replaces_the_ignored_outcome_of_the_same_test() {
        let entry = |outcome, target: &str, path: &str| Entry {
            outcome,
            target: target.to_string(),
            path: path.to_string(),
        };
        let mut record = Record {
            entries: vec![
                entry(Outcome::Passed, "listings:src/lib.rs", "a"),
                entry(
                    Outcome::Ignored,
                    "broken_books:tests/broken_books.rs",
                    "b",
                ),
                entry(Outcome::Ignored, "listings:src/lib.rs", "b"),
            ],
            ..Record::default()
        };
        fold(
            &mut record,
            vec![
                entry(
                    Outcome::Passed,
                    "broken_books:tests/broken_books.rs",
                    "b",
                ),
                entry(
                    Outcome::Failed,
                    "browser_checks:tests/browser_checks.rs",
                    "c",
                ),
            ],
        );
        let seen: Vec<(Outcome, &str)> = record
            .entries
            .iter()
            .map(|e| (e.outcome, e.path.as_str()))
            .collect();
        // The same name in another binary keeps its own outcome.
        assert_eq!(
            seen,
            [
                (Outcome::Passed, "a"),
                (Outcome::Passed, "b"),
                (Outcome::Ignored, "b"),
                (Outcome::Failed, "c"),
            ]
        );
    }

    #[test]
    fn libtest_lines_give_each_tests_outcome_under_its_binary() {
        let output = "   Compiling listings v0.1.0\n\
            \x20    Running unittests src/lib.rs (target/debug/deps/listings-0a1b2c)\n\
            \n\
            running 3 tests\n\
            test m3::cost::tests::rows_sum ... ok\n\
            test m3::cost::tests::slow ... ignored, takes minutes\n\
            test m3::cost::tests::bad_shape - should panic ... ok\n\
            test m3::cost::tests::broken ... FAILED\n\
            \n\
            test result: FAILED. 2 passed; 1 failed; 1 ignored\n\
            \x20    Running tests/bad_inputs.rs (target/debug/deps/bad_inputs-99ff)\n\
            test empty_input_is_an_error ... ok\n\
            \x20  Doc-tests listings\n\
            test listings/src/lib.rs - add (line 3) ... ok\n";
        let entries = parse(output);
        let seen: Vec<(Outcome, &str, &str)> = entries
            .iter()
            .map(|e| (e.outcome, e.target.as_str(), e.path.as_str()))
            .collect();
        let lib = "listings:src/lib.rs";
        assert_eq!(
            seen,
            [
                (Outcome::Passed, lib, "m3::cost::tests::rows_sum"),
                (Outcome::Ignored, lib, "m3::cost::tests::slow"),
                (Outcome::Passed, lib, "m3::cost::tests::bad_shape"),
                (Outcome::Failed, lib, "m3::cost::tests::broken"),
                (
                    Outcome::Passed,
                    "bad_inputs:tests/bad_inputs.rs",
                    "empty_input_is_an_error"
                ),
            ]
        );
    }

    #[test]
    fn the_machine_names_its_processor_count() {
        assert!(machine().contains("logical CPUs"), "{}", machine());
    }
}
