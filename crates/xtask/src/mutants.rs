//! `cargo xtask mutants`: mutation testing of the listings the book shows.
//!
//! cargo-mutants (pinned, installed like mdbook) changes one thing at a time
//! in a function — an operator, a returned value — and runs the tests of
//! `listings` on each change; a test that fails has caught the mutant. Only
//! the functions inside the anchors the chapters include are mutated (the
//! book's listings, not the code beside them), one file at a time, and a
//! file's mutants can be split into shards (`--shard k/n`, k from 0) run in
//! different sessions. The results are merged into
//! `listings/data/mutants.tsv`, one row per file and shard, keyed by a hash
//! of the file's contents: a new hash replaces the file's rows, so only
//! changed files need to run again, and `listings::mutation` reports each
//! row as current or stale. The mutants run in a detached worktree of the
//! committed HEAD under `target/mutants/tree`, so the checkout being edited
//! is never mutated; its `target/debug` is copied there once, so the first
//! build is incremental.

use crate::{Failure, capture, root, run, step};
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The cargo-mutants release the results were made with.
pub const VERSION: &str = "27.1.0";
/// The committed results, from the workspace root.
pub const DATA: &str = "listings/data/mutants.tsv";
/// The columns of the committed results.
pub const HEADER: &str = "file\thash\tshard\tcaught\tmissed\tunviable\t\
                          timeout\tseconds\tmachine\tdate\tcommand";
/// Seconds a mutant's tests may take before it counts as timed out.
const TIMEOUT: &str = "600";

/// What to run: the files (all the files with anchors when none is
/// named), one shard of each, or only merge results already on disk.
#[derive(Debug, PartialEq)]
pub struct Plan {
    pub files: Vec<String>,
    pub shard: (usize, usize),
    pub merge_only: bool,
    /// Run every test of `listings` on each mutant, not only its chapter's.
    pub all_tests: bool,
    /// Judge each mutant by the unit tests whose path contains this, in
    /// place of the chapter's (for a shared file, its own module's tests).
    pub tests: Option<String>,
}

/// The command line after `cargo xtask mutants`.
pub fn plan(args: &[String]) -> Result<Plan, Failure> {
    let mut plan = Plan {
        files: vec![],
        shard: (0, 1),
        merge_only: false,
        all_tests: false,
        tests: None,
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--file" => match args.next() {
                Some(f) => plan.files.push(f.clone()),
                None => return Err(Failure("--file needs a path".into())),
            },
            "--shard" => {
                let given = args.next().map(String::as_str).unwrap_or("");
                plan.shard = shard(given)?;
            }
            "--merge-only" => plan.merge_only = true,
            "--all-tests" => plan.all_tests = true,
            "--tests" => match args.next() {
                Some(f) if !f.starts_with("--") => plan.tests = Some(f.clone()),
                _ => return Err(Failure("--tests needs a test path".into())),
            },
            other => {
                return Err(Failure(format!(
                    "unknown mutants argument `{other}` (--file PATH, \
                     --shard k/n, --tests PATH, --all-tests, --merge-only)"
                )));
            }
        }
    }
    Ok(plan)
}

/// `k/n` with k < n, as cargo-mutants numbers shards (from 0).
fn shard(text: &str) -> Result<(usize, usize), Failure> {
    let bad = || Failure(format!("--shard takes k/n with 0 ≤ k < n: `{text}`"));
    let (k, n) = text.split_once('/').ok_or_else(bad)?;
    let (k, n) = (k.parse().map_err(|_| bad())?, n.parse().map_err(|_| bad())?);
    if k >= n {
        return Err(bad());
    }
    Ok((k, n))
}

/// The unit tests that judge a chapter file's mutants: those of its
/// chapter's module (`listings/src/m3/cost/mod.rs` → `m3::cost::`), which
/// hold the tests of what the chapter claims. A shared file (directly
/// under `listings/src`) has none of its own: every test judges it.
pub fn chapter_tests(file: &str) -> Option<String> {
    let inside = file.strip_prefix("listings/src/")?;
    let parts: Vec<&str> = inside.split('/').collect();
    match parts.as_slice() {
        [part, chapter, _, ..]
            if ["m3", "paper", "after", "appendix"].contains(part) =>
        {
            Some(format!("{part}::{chapter}::"))
        }
        [part, file] if ["m3", "paper", "after", "appendix"].contains(part) => {
            Some(format!("{part}::{}::", file.trim_end_matches(".rs")))
        }
        _ => None,
    }
}

/// The names of the functions inside a file's anchors: every `fn NAME`
/// between `// ANCHOR: x` and `// ANCHOR_END: x`.
pub fn anchored_functions(source: &str) -> Vec<String> {
    let mut inside = 0usize;
    let mut names = BTreeSet::new();
    for line in source.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("// ANCHOR:") {
            inside += 1;
        } else if trimmed.starts_with("// ANCHOR_END:") {
            inside = inside.saturating_sub(1);
        } else if inside > 0
            && let Some(at) = trimmed.find("fn ")
            && (at == 0 || trimmed[..at].ends_with(' '))
        {
            let name: String = trimmed[at + 3..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                names.insert(name);
            }
        }
    }
    names.into_iter().collect()
}

/// The regex that selects the mutants of these functions among cargo-mutants'
/// names ("replace + with - in f", "replace f -> T with …", "Type::f").
pub fn regex(functions: &[String]) -> String {
    format!(r"\b({})\b", functions.join("|"))
}

/// FNV-1a, 64 bits, of a file's bytes: enough to tell whether a file
/// changed since its mutants ran.
pub use mdbook_listings::fnv::hash as content_hash;

/// Every listings file with an anchor, the book's listings.
fn listing_files(root: &Path) -> Vec<String> {
    let mut found = vec![];
    let mut dirs = vec![root.join("listings/src")];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs")
                && fs::read_to_string(&path)
                    .is_ok_and(|s| !anchored_functions(&s).is_empty())
                && let Ok(rel) = path.strip_prefix(root)
            {
                found.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    found.sort();
    found
}

/// Where one shard of one file writes its results.
fn out_dir(root: &Path, file: &str, (k, n): (usize, usize)) -> PathBuf {
    let slug = file.replace(['/', '.'], "_");
    root.join("target/mutants")
        .join(slug)
        .join(format!("shard-{k}-of-{n}"))
}

/// One row of the committed results.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub file: String,
    pub hash: u64,
    pub shard: (usize, usize),
    pub caught: usize,
    pub missed: usize,
    pub unviable: usize,
    pub timeout: usize,
    pub seconds: u64,
    pub machine: String,
    pub date: String,
    pub command: String,
    /// The names of the mutants no test caught.
    pub missed_names: Vec<String>,
}

impl Row {
    fn line(&self) -> String {
        let (k, n) = self.shard;
        format!(
            "{}\t{:016x}\t{k}/{n}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
            self.file,
            self.hash,
            self.caught,
            self.missed,
            self.unviable,
            self.timeout,
            self.seconds,
            self.machine,
            self.date,
            self.command
        )
    }
}

/// The comment lines that open the committed file.
const ABOUT: [&str; 4] = [
    "Made by `cargo xtask mutants` with cargo-mutants 27.1.0: the functions \
     inside the anchors of each file, mutated one change at a time, and on \
     each the unit tests of the file's chapter (cargo test --lib -- \
     CHAPTER::), or with --tests PATH those whose path contains PATH (the \
     row's command says), or with --all-tests, and for a shared file run \
     without --tests, every test of listings (cargo test --tests).",
    "caught: a test failed; missed: every test passed; unviable: the change \
     did not compile; timeout: the tests ran past 600 s. Score: caught over \
     caught + missed + timeout, less the equivalent mutants (missed ones \
     that cannot change behaviour) of listings/data/equivalent_mutants.tsv.",
    "hash: FNV-1a 64 of the file's bytes when it ran; a row whose hash is \
     not the file's is stale. One row per file and shard k/n.",
    "Each line `missed: FILE k/n: MUTANT` names a mutant no test caught.",
];

/// Read the committed results: the rows, with their missed mutants.
pub fn parse(text: &str) -> Result<Vec<Row>, Failure> {
    let mut rows: Vec<Row> = vec![];
    let mut missed: Vec<(String, (usize, usize), String)> = vec![];
    let mut header = false;
    for (i, line) in text.lines().enumerate() {
        let bad = |what: &str| Failure(format!("{DATA}:{}: {what}", i + 1));
        if let Some(comment) = line.strip_prefix("# ") {
            if let Some(m) = comment.strip_prefix("missed: ") {
                let (at, name) =
                    m.split_once(": ").ok_or_else(|| bad("missed"))?;
                let (file, k_n) =
                    at.rsplit_once(' ').ok_or_else(|| bad("missed"))?;
                let k_n = shard(k_n).map_err(|_| bad("missed shard"))?;
                missed.push((file.to_string(), k_n, name.to_string()));
            }
            continue;
        }
        if !header {
            if line != HEADER {
                return Err(bad("expected the header"));
            }
            header = true;
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() != 11 {
            return Err(bad("expected 11 fields"));
        }
        let count = |s: &str| s.parse::<usize>().map_err(|_| bad("a count"));
        rows.push(Row {
            file: f[0].to_string(),
            hash: u64::from_str_radix(f[1], 16).map_err(|_| bad("hash"))?,
            shard: shard(f[2]).map_err(|_| bad("shard"))?,
            caught: count(f[3])?,
            missed: count(f[4])?,
            unviable: count(f[5])?,
            timeout: count(f[6])?,
            seconds: f[7].parse().map_err(|_| bad("seconds"))?,
            machine: f[8].to_string(),
            date: f[9].to_string(),
            command: f[10].to_string(),
            missed_names: vec![],
        });
    }
    for (file, k_n, name) in missed {
        let row = rows.iter_mut().find(|r| r.file == file && r.shard == k_n);
        row.ok_or_else(|| Failure(format!("{DATA}: {file} {k_n:?} missed")))?
            .missed_names
            .push(name);
    }
    Ok(rows)
}

/// The committed file's text for these rows.
pub fn render(rows: &[Row]) -> String {
    let mut out = String::new();
    for line in ABOUT {
        let _ = writeln!(out, "# {line}");
    }
    for row in rows {
        let (k, n) = row.shard;
        for name in &row.missed_names {
            let _ = writeln!(out, "# missed: {} {k}/{n}: {name}", row.file);
        }
    }
    let _ = writeln!(out, "{HEADER}");
    for row in rows {
        let _ = writeln!(out, "{}", row.line());
    }
    out
}

/// Merge a new row: it replaces the row of the same file and shard, and
/// every row of that file made from other contents (another hash) or cut
/// into another number of shards. Rows stay sorted by file and shard.
pub fn merge(mut rows: Vec<Row>, new: Row) -> Vec<Row> {
    rows.retain(|r| {
        r.file != new.file
            || (r.hash == new.hash
                && r.shard.1 == new.shard.1
                && r.shard.0 != new.shard.0)
    });
    rows.push(new);
    rows.sort_by(|a, b| (&a.file, a.shard).cmp(&(&b.file, b.shard)));
    rows
}

/// The mutant names cargo-mutants listed in `name`.txt under `out`.
fn names(out: &Path, name: &str) -> Vec<String> {
    let path = out.join("mutants.out").join(format!("{name}.txt"));
    fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

/// The CPU's model name and the cores, as the other committed files say it.
fn machine() -> String {
    let cpu = fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, name)| name.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    format!("{cpu} ({cores} cores)")
}

/// A detached worktree of HEAD under target/mutants/tree, with a copy of
/// this checkout's target/debug the first time: cargo-mutants changes the
/// files there, in place, never in the checkout being edited.
fn worktree(root: &Path) -> Result<PathBuf, Failure> {
    let tree = root.join("target/mutants/tree");
    let tree_arg = tree.to_string_lossy().into_owned();
    if tree.exists() {
        let head = capture(
            "git",
            &["-C", &root.to_string_lossy(), "rev-parse", "HEAD"],
        )
        .unwrap_or_default();
        run(
            "git",
            &["-C", &tree_arg, "checkout", "--detach", "-f", head.trim()],
            root,
        )?;
    } else {
        run(
            "git",
            &["worktree", "add", "--detach", &tree_arg, "HEAD"],
            root,
        )?;
        fs::create_dir_all(tree.join("target"))
            .map_err(|e| Failure(e.to_string()))?;
        let from = root.join("target/debug").to_string_lossy().into_owned();
        let to = tree.join("target").to_string_lossy().into_owned();
        run("cp", &["-a", &from, &to], root)?;
    }
    Ok(tree)
}

/// `cargo xtask mutants`.
pub fn mutants(args: &[String]) -> Result<(), Failure> {
    let plan = plan(args)?;
    let root = root();
    let files = match plan.files.is_empty() {
        true => listing_files(&root),
        false => plan.files.clone(),
    };
    let (k, n) = plan.shard;
    let tree = match plan.merge_only {
        true => root.clone(),
        false => {
            crate::setup::tool_at("cargo-mutants", VERSION)?;
            worktree(&root)?
        }
    };
    let data = root.join(DATA);
    let mut rows = match fs::read_to_string(&data) {
        Ok(text) => parse(&text)?,
        Err(_) => vec![],
    };
    for file in &files {
        let source = fs::read(tree.join(file))
            .map_err(|e| Failure(format!("{file}: {e}")))?;
        let functions = anchored_functions(&String::from_utf8_lossy(&source));
        if functions.is_empty() {
            return Err(Failure(format!(
                "{file}: no function inside an anchor"
            )));
        }
        let out = out_dir(&root, file, plan.shard);
        let shard_arg = format!("{k}/{n}");
        if !plan.merge_only {
            step(&format!(
                "mutating {file}, shard {shard_arg}: {}",
                functions.join(", ")
            ));
            fs::create_dir_all(&out).map_err(|e| Failure(e.to_string()))?;
            let started = Instant::now();
            let out_arg = out.to_string_lossy().into_owned();
            let re = regex(&functions);
            let mut cargo_args = vec![
                "mutants",
                "--in-place",
                "--package",
                "listings",
                "--file",
                file,
                "--re",
                &re,
                "--shard",
                &shard_arg,
                "--baseline",
                "skip",
                "--timeout",
                TIMEOUT,
                "--no-shuffle",
                "--output",
                &out_arg,
            ];
            // A chapter's file: its chapter's unit tests only, a tenth of
            // the time per mutant; what they miss, every test may still
            // catch (`--all-tests`), so the score is a lower bound. `--lib`
            // goes to the build as well as the test: without it each mutant
            // rebuilt and relinked every test binary and example, minutes
            // of the build phase for tests that are then not run.
            let filter = plan
                .tests
                .clone()
                .or_else(|| chapter_tests(file))
                .filter(|_| !plan.all_tests);
            let filter_arg = filter.as_deref().unwrap_or_default();
            match &filter {
                Some(_) => cargo_args.extend([
                    "--cargo-arg=--lib",
                    "--cargo-test-arg=--",
                    "--cargo-test-arg",
                    filter_arg,
                ]),
                None => cargo_args.push("--cargo-arg=--tests"),
            }
            // cargo-mutants exits non-zero when a mutant is missed or times
            // out; the files it writes say which, so its status is not a
            // failure here.
            let _ = run("cargo", &cargo_args, &tree);
            let seconds = started.elapsed().as_secs();
            fs::write(
                out.join("done.txt"),
                format!("rc 0 seconds {seconds}\n"),
            )
            .map_err(|e| Failure(e.to_string()))?;
        }
        let done = fs::read_to_string(out.join("done.txt")).map_err(|_| {
            Failure(format!(
                "{file} shard {shard_arg}: no finished run in {}",
                out.display()
            ))
        })?;
        let seconds = done
            .split_whitespace()
            .skip_while(|w| *w != "seconds")
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let missed_names = names(&out, "missed");
        let date = capture("date", &["-u", "+%F"]).unwrap_or_default();
        let row = Row {
            file: file.clone(),
            hash: content_hash(&source),
            shard: plan.shard,
            caught: names(&out, "caught").len(),
            missed: missed_names.len(),
            unviable: names(&out, "unviable").len(),
            timeout: names(&out, "timeout").len(),
            seconds,
            machine: machine(),
            date: date.trim().to_string(),
            command: format!(
                "cargo xtask mutants --file {file} --shard {shard_arg}{}{}",
                plan.tests
                    .as_ref()
                    .map_or(String::new(), |t| format!(" --tests {t}")),
                if plan.all_tests { " --all-tests" } else { "" }
            ),
            missed_names,
        };
        println!(
            "{file} {shard_arg}: {} caught, {} missed, {} unviable, {} timed out, {} s",
            row.caught, row.missed, row.unviable, row.timeout, row.seconds
        );
        rows = merge(rows, row);
        fs::write(&data, render(&rows)).map_err(|e| Failure(e.to_string()))?;
    }
    println!("wrote {DATA}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chapter_files_mutants_are_judged_by_its_chapters_tests() {
        for (file, tests) in [
            ("listings/src/m3/cost/mod.rs", Some("m3::cost::")),
            (
                "listings/src/after/recall/model.rs",
                Some("after::recall::"),
            ),
            (
                "listings/src/appendix/how_built.rs",
                Some("appendix::how_built::"),
            ),
            ("listings/src/causal.rs", None),
            ("listings/src/fast/rules.rs", None),
        ] {
            assert_eq!(chapter_tests(file).as_deref(), tests, "{file}");
        }
    }

    #[test]
    fn only_functions_inside_anchors_are_aimed_at() {
        let source = "fn outside() {}\n// ANCHOR: a\npub fn shown(x: u8) {}\n\
                      impl T {\n    pub fn method(&self) {}\n}\n\
                      // ANCHOR_END: a\nfn after() {}\n";
        assert_eq!(anchored_functions(source), ["method", "shown"]);
        assert_eq!(regex(&anchored_functions(source)), r"\b(method|shown)\b");
    }

    #[test]
    fn arguments_name_files_a_shard_or_a_merge() {
        let args = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        let p = plan(&args("--file a.rs --shard 1/3")).unwrap();
        assert_eq!(p.files, ["a.rs"]);
        assert_eq!(p.shard, (1, 3));
        assert!(plan(&args("--shard 3/3")).is_err());
        assert!(plan(&args("--shard x")).is_err());
        assert!(plan(&args("--bogus")).is_err());
        assert!(plan(&args("--merge-only")).unwrap().merge_only);
        let scoped = plan(&args("--file phi.rs --tests phi::")).unwrap();
        assert_eq!(scoped.tests.as_deref(), Some("phi::"));
        assert!(plan(&args("--file phi.rs --tests")).is_err());
        assert!(plan(&args("--tests --all-tests")).is_err());
    }

    fn row(file: &str, hash: u64, shard: (usize, usize)) -> Row {
        Row {
            file: file.into(),
            hash,
            shard,
            caught: 3,
            missed: 1,
            unviable: 2,
            timeout: 0,
            seconds: 60,
            machine: "cpu (2 cores)".into(),
            date: "2026-12-02".into(),
            command: "cargo xtask mutants".into(),
            missed_names: vec![format!("{file}:1:1: replace + with -")],
        }
    }

    #[test]
    fn shards_of_one_version_merge_and_a_new_version_replaces_them() {
        let rows = merge(vec![], row("a.rs", 1, (0, 2)));
        let rows = merge(rows, row("b.rs", 9, (0, 1)));
        let rows = merge(rows, row("a.rs", 1, (1, 2)));
        assert_eq!(rows.len(), 3);
        let rows = merge(rows, row("a.rs", 1, (1, 2))); // the shard again
        assert_eq!(rows.len(), 3);
        let rows = merge(rows, row("a.rs", 2, (0, 2))); // the file changed
        let a: Vec<_> = rows.iter().filter(|r| r.file == "a.rs").collect();
        assert_eq!(a.len(), 1);
        assert_eq!((a[0].hash, a[0].shard), (2, (0, 2)));
        assert_eq!(parse(&render(&rows)).unwrap(), rows);
    }
}
