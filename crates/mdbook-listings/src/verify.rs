//! The evidence behind a claim mark: the record of the test run that
//! built the book (which tests passed, failed or were ignored, with the
//! commit, date, machine and time taken), the command that reruns one
//! test, and the kind of evidence a test is, read from its source.
//!
//! `cargo xtask test` writes the record (a small text file under
//! `target/`) from libtest's own lines, `test PATH ... ok`, and names it
//! to the build in `BOOK_TEST_RECORD`; a build without it says of every
//! test "not run in this build".

use crate::claim::Test;
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

/// The environment variable that names the record to a build.
pub const RECORD_VAR: &str = "BOOK_TEST_RECORD";

/// What happened to a test in the recorded run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    Passed,
    Failed,
    Ignored,
    /// The record does not hold it, or there is no record.
    NotRun,
}

impl Outcome {
    /// The word the record uses, and libtest's.
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Passed => "ok",
            Outcome::Failed => "FAILED",
            Outcome::Ignored => "ignored",
            Outcome::NotRun => "not-run",
        }
    }

    fn from_word(word: &str) -> Option<Outcome> {
        match word {
            "ok" => Some(Outcome::Passed),
            "FAILED" => Some(Outcome::Failed),
            "ignored" => Some(Outcome::Ignored),
            _ => None,
        }
    }
}

/// One test in the record: its outcome, the test binary it ran in (the
/// binary's crate name and its source file, `listings:src/lib.rs`), and
/// its path inside that binary (`m3::cost::tests::NAME`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub outcome: Outcome,
    pub target: String,
    pub path: String,
}

/// The record of one run of the tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Record {
    pub commit: String,
    pub date: String,
    pub machine: String,
    pub duration: String,
    pub command: String,
    pub entries: Vec<Entry>,
}

impl Record {
    /// Read a record written by [`Record::to_text`].
    pub fn parse(text: &str) -> Result<Record, String> {
        let mut record = Record::default();
        for (i, line) in text.lines().enumerate() {
            if let Some(header) = line.strip_prefix("# ") {
                let (key, value) = header.split_once(": ").unwrap_or(("", ""));
                let value = value.trim().to_string();
                match key {
                    "commit" => record.commit = value,
                    "date" => record.date = value,
                    "machine" => record.machine = value,
                    "duration" => record.duration = value,
                    "command" => record.command = value,
                    _ => {}
                }
                continue;
            }
            if line.trim().is_empty() {
                continue;
            }
            let fields: Vec<&str> = line.split('\t').collect();
            let outcome = fields.first().and_then(|w| Outcome::from_word(w));
            match (outcome, fields.len()) {
                (Some(outcome), 3) => record.entries.push(Entry {
                    outcome,
                    target: fields[1].to_string(),
                    path: fields[2].to_string(),
                }),
                _ => {
                    return Err(format!(
                        "line {}: `{line}` is not `ok|FAILED|ignored TAB \
                         target TAB test`",
                        i + 1
                    ));
                }
            }
        }
        if record.commit.is_empty() || record.date.is_empty() {
            return Err("it names no commit or no date".to_string());
        }
        Ok(record)
    }

    /// The record as text: `# key: value` headers, then one test a line.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for (key, value) in [
            ("commit", &self.commit),
            ("date", &self.date),
            ("machine", &self.machine),
            ("duration", &self.duration),
            ("command", &self.command),
        ] {
            out.push_str(&format!("# {key}: {value}\n"));
        }
        for e in &self.entries {
            out.push_str(&format!(
                "{}\t{}\t{}\n",
                e.outcome.word(),
                e.target,
                e.path
            ));
        }
        out
    }

    /// The record the environment names, if any.
    pub fn from_env() -> Result<Option<Record>, String> {
        let Some(path) = std::env::var_os(RECORD_VAR) else {
            return Ok(None);
        };
        let path = Path::new(&path);
        let text = fs::read_to_string(path).map_err(|e| {
            format!(
                "{RECORD_VAR} names {}, which cannot be read: {e}",
                path.display()
            )
        })?;
        Record::parse(&text)
            .map(Some)
            .map_err(|e| format!("the test record {}: {e}", path.display()))
    }

    /// The commit, shortened, and the date: how the page names the run.
    pub fn run_name(&self) -> String {
        let short: String = self.commit.chars().take(12).collect();
        let rest = self.commit.get(40..).unwrap_or("").trim();
        format!("the test run of commit {short}{rest} on {}", self.date)
    }

    /// How many tests passed, failed and were ignored.
    pub fn counts(&self) -> (usize, usize, usize) {
        let n = |o| self.entries.iter().filter(|e| e.outcome == o).count();
        (n(Outcome::Passed), n(Outcome::Failed), n(Outcome::Ignored))
    }
}

/// Where a test runs: its package, the cargo target that holds it, and its
/// path inside that target, as derived from its file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    pub package: String,
    /// `--lib`, `--bin NAME` or `--test NAME`.
    pub target_flag: String,
    /// The record's name of the binary, `listings:src/lib.rs`.
    pub target: String,
    pub path: String,
}

/// The package folder and name of a workspace file: `listings/...` is the
/// package `listings`, `crates/NAME/...` the package `NAME`.
fn package_of(file: &str) -> Option<(&str, &str, &str)> {
    if let Some(rest) = file.strip_prefix("listings/") {
        return Some(("listings", "listings", rest));
    }
    let rest = file.strip_prefix("crates/")?;
    let (name, inside) = rest.split_once('/')?;
    Some((&file[..7 + name.len()], name, inside))
}

/// Where `test`, named `name`, runs, from its file and module.
pub fn place(name: &str, test: &Test) -> Option<Place> {
    let (_, package, inside) = package_of(&test.file)?;
    let krate = package.replace('-', "_");
    let mut modules: Vec<String> = Vec::new();
    let (target_flag, target) = if let Some(file) = inside.strip_prefix("src/")
    {
        let module = file.trim_end_matches(".rs");
        let module = module.strip_suffix("/mod").unwrap_or(module);
        if let Some(bin) = module.strip_prefix("bin/") {
            (format!("--bin {bin}"), format!("{}:src/{file}", krate))
        } else if module == "main" || test.binary_only {
            // A module of a binary-only package belongs to its main.rs.
            if module != "main" {
                modules.extend(module.split('/').map(str::to_string));
            }
            (format!("--bin {package}"), format!("{krate}:src/main.rs"))
        } else {
            if module != "lib" {
                modules.extend(module.split('/').map(str::to_string));
            }
            ("--lib".to_string(), format!("{krate}:src/lib.rs"))
        }
    } else if let Some(file) = inside.strip_prefix("tests/") {
        let stem = file.trim_end_matches(".rs");
        if stem.contains('/') {
            return None; // a helper module of the tests, no target
        }
        (format!("--test {stem}"), format!("{stem}:tests/{file}"))
    } else {
        return None;
    };
    modules.extend(test.module.iter().cloned());
    modules.push(name.to_string());
    Some(Place {
        package: package.to_string(),
        target_flag,
        target,
        path: modules.join("::"),
    })
}

/// The command that runs `test` alone, at `path` (from the record, where
/// it holds the test; else as derived from the file).
pub fn command(place: &Place, path: &str, test: &Test) -> String {
    let ignored = if test.source.contains("#[ignore") {
        " --ignored"
    } else {
        ""
    };
    format!(
        "cargo test -p {} {} {path} -- --exact{ignored}",
        place.package, place.target_flag
    )
}

/// A test's result in `record`, and its path there: the entry of its
/// binary at its derived path, or else the entries of its binary whose
/// path ends with its name (all must pass).
pub fn outcome(
    record: Option<&Record>,
    name: &str,
    test: &Test,
) -> (Outcome, Option<String>) {
    let Some(record) = record else {
        return (Outcome::NotRun, None);
    };
    let Some(place) = place(name, test) else {
        return (Outcome::NotRun, None);
    };
    let in_target: Vec<&Entry> = record
        .entries
        .iter()
        .filter(|e| e.target == place.target)
        .collect();
    if let Some(e) = in_target.iter().find(|e| e.path == place.path) {
        return (e.outcome, Some(e.path.clone()));
    }
    let tail = format!("::{name}");
    let same: Vec<&&Entry> = in_target
        .iter()
        .filter(|e| e.path == name || e.path.ends_with(&tail))
        .collect();
    match same.iter().map(|e| e.outcome).max() {
        Some(worst) => (worst, same.first().map(|e| e.path.clone())),
        None => (Outcome::NotRun, None),
    }
}

/// The kind of evidence a test is, decided from its source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// It reads a committed data file: the file, and what its header says
    /// (the command that made it, its date and machine).
    Committed {
        file: String,
        command: Option<String>,
        date: Option<String>,
        machine: Option<String>,
    },
    /// It loops over seeds or shapes it names.
    Sampled,
    /// It computes what it checks when it runs.
    Recomputed,
}

impl Kind {
    /// The kind in words, as the page shows it (Markdown).
    pub fn describe(&self) -> String {
        match self {
            Kind::Committed {
                file,
                command,
                date,
                machine,
            } => {
                let made = match command {
                    Some(c) => format!("the committed results of `{c}`"),
                    None => "committed data".to_string(),
                };
                let mut when = Vec::new();
                if let Some(d) = date {
                    when.push(format!("made {d}"));
                }
                if let Some(m) = machine {
                    when.push(format!("on {m}"));
                }
                let when = if when.is_empty() {
                    String::new()
                } else {
                    format!(", {}", when.join(" "))
                };
                format!("checked against {made} (`{file}`{when})")
            }
            Kind::Sampled => {
                "a numeric check over the seeds and shapes it names".to_string()
            }
            Kind::Recomputed => "recomputed when the book is built".to_string(),
        }
    }
}

/// The committed data files of the workspace under `root` and the names
/// that read them: for each `include_str!` of a file under
/// `listings/data/`, the constant it is bound to and every function of
/// the same file that uses that constant (or such a function).
pub fn data_readers(root: &Path) -> BTreeMap<String, String> {
    let mut texts = Vec::new();
    let mut todo = vec![root.join("listings/src")];
    while let Some(dir) = todo.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                todo.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                if let Ok(text) = fs::read_to_string(&path) {
                    texts.push(text);
                }
            }
        }
    }
    texts.sort();
    readers_of(&texts)
}

/// [`data_readers`] of these files' texts: the constants bound to an
/// `include_str!` of a data file, then every function (of any of the
/// files) that uses one of them or such a function, to a fixed point.
fn readers_of(texts: &[String]) -> BTreeMap<String, String> {
    let mut names: Vec<(String, String)> = Vec::new();
    for text in texts {
        for line in text.lines() {
            let Some(at) = line.find("include_str!(\"") else {
                continue;
            };
            let quoted = &line[at + "include_str!(\"".len()..];
            let included = &quoted[..quoted.find('"').unwrap_or(0)];
            let Some(file) = included.split("data/").nth(1) else {
                continue;
            };
            let Some(name) = line
                .trim_start()
                .strip_prefix("pub ")
                .unwrap_or(line.trim_start())
                .strip_prefix("const ")
                .and_then(|r| r.split(':').next())
            else {
                continue;
            };
            names.push((
                name.trim().to_string(),
                format!("listings/data/{file}"),
            ));
        }
    }
    let functions: Vec<(String, String)> =
        texts.iter().flat_map(|t| functions_in(t)).collect();
    loop {
        let before = names.len();
        for (f, body) in &functions {
            if names.iter().any(|(n, _)| n == f) {
                continue;
            }
            if let Some((_, file)) =
                names.iter().find(|(n, _)| mentions(body, n))
            {
                names.push((f.clone(), file.clone()));
            }
        }
        if names.len() == before {
            break;
        }
    }
    names.into_iter().collect()
}

/// The non-test functions of a file, by name, with their bodies: a `fn`
/// at column 0 (or `pub fn`) to the next `}` at column 0, and a method of
/// an `impl TYPE {` at column 0, as `TYPE::NAME`, to its `    }`.
fn functions_in(text: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    let mut owner: Option<String> = None;
    for (i, line) in lines.iter().enumerate() {
        if let Some(rest) = line.strip_prefix("impl ") {
            // `impl<T> TYPE<T> {`: the type after the generics.
            let after = rest
                .strip_prefix('<')
                .map_or(rest, |r| r.split_once("> ").map_or(r, |(_, t)| t));
            let ty: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            owner = (!rest.contains(" for ") && !ty.is_empty()).then_some(ty);
            continue;
        }
        if *line == "}" {
            owner = None;
        }
        let (indent, prefix) = match &owner {
            Some(ty) if line.starts_with("    ") => ("    ", format!("{ty}::")),
            _ => ("", String::new()),
        };
        let Some(line) = line.strip_prefix(indent) else {
            continue;
        };
        let rest = line
            .strip_prefix("pub fn ")
            .or_else(|| line.strip_prefix("fn "))
            .or_else(|| line.strip_prefix("pub(crate) fn "));
        let Some(rest) = rest else { continue };
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let close = format!("{indent}}}");
        let end = (i..lines.len())
            .find(|&j| lines[j] == close)
            .unwrap_or(lines.len() - 1);
        found.push((format!("{prefix}{name}"), lines[i + 1..=end].join("\n")));
    }
    found
}

/// Does `code` use the identifier `name` (not as part of a longer one)?
fn mentions(code: &str, name: &str) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    code.match_indices(name).any(|(i, _)| {
        !code[..i].ends_with(ident)
            && !code[i + name.len()..].starts_with(ident)
    })
}

/// The kind of evidence `test` is. `readers` are [`data_readers`]; `root`
/// is the workspace, for the data files' headers.
pub fn kind(
    test: &Test,
    readers: &BTreeMap<String, String>,
    root: &Path,
) -> Kind {
    let body = &test.source;
    let mut files: Vec<&String> = readers
        .iter()
        .filter(|(name, _)| mentions(body, name))
        .map(|(_, file)| file)
        .collect();
    // A file made by a command of the book first (the paper's own logs,
    // read beside it, are the comparison, not the result).
    files.sort_by_key(|f| {
        let header = fs::read_to_string(root.join(f)).unwrap_or_default();
        !header.contains("cargo xtask ")
    });
    let file = files.first().map(|f| f.to_string()).or_else(|| {
        let at = body.find("listings/data/")?;
        let rest = &body[at..];
        let end = rest
            .find(|c: char| c == '"' || c.is_whitespace() || c == '`')
            .unwrap_or(rest.len());
        Some(rest[..end].to_string())
    });
    if let Some(file) = file {
        let header = fs::read_to_string(root.join(&file)).unwrap_or_default();
        let (command, date, machine) = header_facts(&header);
        return Kind::Committed {
            file,
            command,
            date,
            machine,
        };
    }
    let loops_over_cases = body.lines().any(|l| {
        let l = l.trim_start();
        let Some(rest) = l.strip_prefix("for ") else {
            return false;
        };
        let Some((pattern, over)) = rest.split_once(" in ") else {
            return false;
        };
        let _ = pattern;
        let lower = rest.to_lowercase();
        let over = over.trim_start();
        lower.contains("seed")
            || lower.contains("shape")
            || over.starts_with('[')
            || over.starts_with("&[")
    });
    if loops_over_cases {
        Kind::Sampled
    } else {
        Kind::Recomputed
    }
}

/// The command, date and machine a data file's `#` header names.
fn header_facts(
    header: &str,
) -> (Option<String>, Option<String>, Option<String>) {
    let (mut command, mut date, mut machine) = (None, None, None);
    for line in header.lines().take_while(|l| l.starts_with('#')) {
        let line = line.trim_start_matches('#').trim();
        let lower = line.to_lowercase();
        if let Some(at) = line.find("cargo xtask ") {
            if command.is_none() {
                let rest = &line[at..];
                let end = rest.find(['`', '(', ';']).unwrap_or(rest.len());
                command = Some(rest[..end].trim().to_string());
            }
        }
        if let Some(d) = lower.strip_prefix("date:") {
            date = Some(line[line.len() - d.len()..].trim().to_string());
        }
        if let Some(m) = lower.strip_prefix("machine:") {
            let m = line[line.len() - m.len()..].trim();
            machine = Some(m.split(';').next().unwrap_or(m).to_string());
        }
    }
    (command, date, machine)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test_at(file: &str, module: &[&str], source: &str) -> Test {
        Test {
            file: file.to_string(),
            line: 3,
            module: module.iter().map(|m| m.to_string()).collect(),
            source: source.to_string(),
            binary_only: false,
        }
    }

    const RECORD: &str = "# commit: 0123456789abcdef0123456789abcdef01234567\n\
        # date: 2026-12-02 13:40 UTC\n# machine: AMD EPYC (2 cores)\n\
        # duration: 312 s\n# command: cargo test --workspace\n\
        ok\tlistings:src/lib.rs\tm3::cost::tests::rows_sum\n\
        FAILED\tlistings:src/lib.rs\tm3::cost::tests::broken\n\
        ignored\tbad_inputs:tests/bad_inputs.rs\tslow\n";

    #[test]
    fn a_record_round_trips_and_counts() {
        let record = Record::parse(RECORD).unwrap();
        assert_eq!(record.entries.len(), 3);
        assert_eq!(record.counts(), (1, 1, 1));
        assert_eq!(Record::parse(&record.to_text()).unwrap(), record);
        assert!(record.run_name().contains("commit 0123456789ab on 2026"));
        assert!(Record::parse("ok\tx\n").is_err());
        assert!(Record::parse("ok\ta\tb\n").unwrap_err().contains("commit"));
    }

    #[test]
    fn a_tests_outcome_and_command_come_from_its_place() {
        let record = Record::parse(RECORD).unwrap();
        let t = test_at("listings/src/m3/cost.rs", &["tests"], "#[test]");
        let p = place("rows_sum", &t).unwrap();
        assert_eq!(p.path, "m3::cost::tests::rows_sum");
        assert_eq!(
            command(&p, &p.path, &t),
            "cargo test -p listings --lib m3::cost::tests::rows_sum -- --exact"
        );
        assert_eq!(outcome(Some(&record), "rows_sum", &t).0, Outcome::Passed);
        assert_eq!(outcome(Some(&record), "broken", &t).0, Outcome::Failed);
        assert_eq!(outcome(None, "rows_sum", &t).0, Outcome::NotRun);
        let other = test_at("listings/src/m3/other.rs", &["tests"], "");
        assert_eq!(outcome(Some(&record), "gone", &other).0, Outcome::NotRun);
        let slow = test_at("listings/tests/bad_inputs.rs", &[], "#[ignore]");
        let p = place("slow", &slow).unwrap();
        assert_eq!(outcome(Some(&record), "slow", &slow).0, Outcome::Ignored);
        assert_eq!(
            command(&p, "slow", &slow),
            "cargo test -p listings --test bad_inputs slow -- --exact --ignored"
        );
        let own =
            test_at("crates/mdbook-listings/src/claim.rs", &["tests"], "");
        let p = place("t", &own).unwrap();
        assert_eq!(
            (p.package.as_str(), p.path.as_str()),
            ("mdbook-listings", "claim::tests::t")
        );
        assert_eq!(p.target, "mdbook_listings:src/lib.rs");
        let bin = Test {
            binary_only: true,
            ..test_at("crates/bench/src/timing.rs", &["tests"], "")
        };
        let p = place("t", &bin).unwrap();
        assert_eq!(
            (p.target.as_str(), p.path.as_str(), p.target_flag.as_str()),
            ("bench:src/main.rs", "timing::tests::t", "--bin bench")
        );
    }

    #[test]
    fn the_kind_of_evidence_is_read_from_the_test() {
        let root = std::env::temp_dir().join("listings-verify-kind");
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join("listings/src/x")).unwrap();
        fs::create_dir_all(root.join("listings/data")).unwrap();
        fs::write(
            root.join("listings/data/runs.tsv"),
            "# Made by `cargo xtask runs` (an example).\n\
             # Machine: AMD EPYC (2 threads); 3 minutes\n# Date: 2026-12-01\n\
             a\tb\n",
        )
        .unwrap();
        fs::write(
            root.join("listings/src/x/study.rs"),
            "pub const COMMITTED: &str = include_str!(\"../../data/runs.tsv\");\n\
             \npub fn committed() -> usize {\n    COMMITTED.len()\n}\n\
             \npub fn best() -> usize {\n    committed() + 1\n}\n\
             \nimpl Runs {\n    pub fn load() -> usize {\n        \
             COMMITTED.len()\n    }\n}\n",
        )
        .unwrap();
        let readers = data_readers(&root);
        assert_eq!(readers.len(), 4, "{readers:?}");
        assert!(readers.contains_key("Runs::load"), "{readers:?}");
        let uses =
            test_at("listings/src/x/study.rs", &[], "assert!(best() > 0);");
        let kind = kind(&uses, &readers, &root);
        assert_eq!(
            kind.describe(),
            "checked against the committed results of `cargo xtask runs` \
             (`listings/data/runs.tsv`, made 2026-12-01 on AMD EPYC (2 threads))"
        );
        let seeds = test_at("a", &[], "for seed in 0..5 {\n}");
        assert_eq!(super::kind(&seeds, &readers, &root), Kind::Sampled);
        let shapes = test_at("a", &[], "for &(n, d) in &[(4, 2)] {}");
        assert_eq!(super::kind(&shapes, &readers, &root), Kind::Sampled);
        let zipped = test_at("a", &[], "for (a, b) in x.iter().zip(y) {}");
        assert_eq!(super::kind(&zipped, &readers, &root), Kind::Recomputed);
        let plain = test_at("a", &[], "assert_eq!(bestish(), 1);");
        assert_eq!(super::kind(&plain, &readers, &root), Kind::Recomputed);
        fs::remove_dir_all(&root).unwrap();
    }
}
