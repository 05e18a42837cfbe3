//! `{{#claim test_name ...}}`: a mark after a sentence, naming the tests
//! that check it, and `{{#claims}}`, the appendix page that lists every
//! marked sentence with its tests.
//!
//! A mark renders as a small link to its entry in the appendix; the entry
//! quotes the sentence, links back to it, and gives each test's file and
//! line and, collapsed, its source. The tests are found by reading the
//! Rust sources of the workspace (the folder above `src/`): a mark whose
//! test does not exist there fails the build. Whether the test also runs
//! is `cargo xtask test`'s to check, with [`marked_tests`].

use crate::chapter::Chapter;
use crate::escape::find_unescaped;
use crate::reference;
use crate::scan::{Scanned, scan};
use crate::verify::{self, Outcome, Record};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

const MARK: &str = "{{#claim ";
const PAGE: &str = "{{#claims}}";
const REPORT: &str = "{{#verification}}";

/// A test function found in the workspace's sources.
#[derive(Clone, Debug, PartialEq)]
pub struct Test {
    /// Its file, relative to the workspace, with `/`.
    pub file: String,
    /// The line of its `fn`, from 1.
    pub line: usize,
    /// The modules written around it in its file, outermost first
    /// (`["tests"]` for a test in `mod tests { ... }`).
    pub module: Vec<String>,
    /// From its `#[test]` to its closing brace.
    pub source: String,
    /// Whether its package has no library (no `src/lib.rs`), so that a
    /// test under `src/` belongs to the package's binary.
    pub binary_only: bool,
}

/// Every `#[test]` function under `root`, by name (a name may be used in
/// several files). Folders named `target`, `book`, `node_modules` or
/// starting with a dot are skipped.
pub fn find_tests(root: &Path) -> BTreeMap<String, Vec<Test>> {
    let mut tests: BTreeMap<String, Vec<Test>> = BTreeMap::new();
    let mut todo = vec![root.to_path_buf()];
    let mut files: Vec<PathBuf> = Vec::new();
    while let Some(dir) = todo.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                let skip = ["target", "book", "node_modules"];
                if !name.starts_with('.') && !skip.contains(&name.as_str()) {
                    todo.push(path);
                }
            } else if name.ends_with(".rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    for path in files {
        let Ok(text) = fs::read_to_string(&path) else {
            continue;
        };
        let file = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .to_string_lossy()
            .replace('\\', "/");
        let binary_only = binary_only(root, &file);
        for (name, mut test) in tests_in(&file, &text) {
            test.binary_only = binary_only;
            tests.entry(name).or_default().push(test);
        }
    }
    tests
}

/// Whether the package of `file` (`listings/...` or `crates/NAME/...`,
/// relative to `root`) has a `src/main.rs` and no `src/lib.rs`.
fn binary_only(root: &Path, file: &str) -> bool {
    let package = match file.strip_prefix("crates/") {
        Some(rest) => match rest.split_once('/') {
            Some((name, _)) => root.join("crates").join(name),
            None => return false,
        },
        None => match file.split_once('/') {
            Some((first, _)) => root.join(first),
            None => return false,
        },
    };
    package.join("src/main.rs").is_file()
        && !package.join("src/lib.rs").is_file()
}

/// The `#[test]` functions of one file: after `#[test]` and any further
/// attributes, a `fn NAME(`; the body ends at the first line that is a
/// `}` indented as the `fn` is (rustfmt's layout).
fn tests_in(file: &str, text: &str) -> Vec<(String, Test)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.trim() != "#[test]" {
            continue;
        }
        let Some(f) = (i + 1..lines.len())
            .find(|&j| !lines[j].trim_start().starts_with("#["))
        else {
            continue;
        };
        let fn_line = lines[f];
        let Some(rest) = fn_line.trim_start().strip_prefix("fn ") else {
            continue;
        };
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let indent = &fn_line[..fn_line.len() - fn_line.trim_start().len()];
        let close = format!("{indent}}}");
        let one_line = fn_line.matches('{').count()
            == fn_line.matches('}').count()
            && fn_line.trim_end().ends_with('}');
        let end = (f..lines.len())
            .find(|&j| one_line || lines[j] == close)
            .unwrap_or(lines.len() - 1);
        let source = lines[i..=end]
            .iter()
            .map(|l| l.strip_prefix(indent).unwrap_or(l))
            .collect::<Vec<_>>()
            .join("\n");
        found.push((
            name,
            Test {
                file: file.to_string(),
                line: f + 1,
                module: enclosing_modules(&lines[..f], indent.len()),
                source,
                binary_only: false,
            },
        ));
    }
    found
}

/// The inline modules (`mod NAME {`) around a line indented by `indent`,
/// given the lines before it, outermost first.
fn enclosing_modules(before: &[&str], mut indent: usize) -> Vec<String> {
    let mut modules = Vec::new();
    for line in before.iter().rev() {
        if indent == 0 {
            break;
        }
        let trimmed = line.trim_start();
        let depth = line.len() - trimmed.len();
        if depth >= indent || trimmed.is_empty() {
            continue;
        }
        let declared = trimmed
            .strip_prefix("pub ")
            .or_else(|| trimmed.strip_prefix("pub(crate) "))
            .unwrap_or(trimmed)
            .strip_prefix("mod ");
        if let Some(rest) = declared.filter(|_| trimmed.ends_with('{')) {
            modules.push(rest.trim_end_matches('{').trim().to_string());
            indent = depth;
        }
    }
    modules.reverse();
    modules
}

/// The tests a mark's name means: `NAME`, every `#[test] fn NAME`; a name
/// qualified by its module, `m3::attention::NAME`, only those whose file
/// path holds `m3/attention` (for a name two modules use).
pub fn resolve<'a>(
    name: &str,
    tests: &'a BTreeMap<String, Vec<Test>>,
) -> Vec<&'a Test> {
    let (module, name) = match name.rsplit_once("::") {
        Some((module, name)) => (module.replace("::", "/"), name),
        None => (String::new(), name),
    };
    tests
        .get(name)
        .into_iter()
        .flatten()
        .filter(|t| t.file.trim_end_matches(".rs").contains(&module))
        .collect()
}

/// The function name a mark's (maybe qualified) name ends with.
pub fn function_name(name: &str) -> &str {
    name.rsplit("::").next().unwrap_or(name)
}

/// The test names of every mark in a chapter's Markdown, outside code
/// blocks, in order (a name once per mark). `cargo xtask test` checks
/// that each of them ran.
pub fn marked_tests(content: &str) -> Vec<String> {
    let mut names = Vec::new();
    for s in scan(content) {
        if !s.inside {
            for (_, _, mark) in marks(s.text) {
                names.extend(mark.into_iter().map(str::to_string));
            }
        }
    }
    names
}

/// The marks of one line: where each starts and ends, and its names.
fn marks(text: &str) -> Vec<(usize, usize, Vec<&str>)> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(start) = find_unescaped(&text[from..], MARK) {
        let start = from + start;
        let Some(len) = text[start..].find("}}") else {
            found.push((start, text.len(), Vec::new()));
            break;
        };
        let names = text[start + MARK.len()..start + len]
            .split_whitespace()
            .collect();
        found.push((start, start + len + 2, names));
        from = start + len + 2;
    }
    found
}

/// One marked sentence.
pub(crate) struct Claim {
    /// The chapter it is in, by index, and its number there (from 1).
    pub(crate) chapter: usize,
    pub(crate) number: usize,
    /// The sentence, as Markdown, without its mark.
    pub(crate) sentence: String,
    pub(crate) tests: Vec<String>,
}

/// The first pass: every mark of every chapter, each test name checked
/// against `tests`. `chapters` are (path, content) in reading order.
pub(crate) fn collect(
    chapters: &[(&str, &str)],
    tests: &BTreeMap<String, Vec<Test>>,
    errors: &mut Vec<String>,
) -> Vec<Claim> {
    let mut claims = Vec::new();
    for (chapter, (path, content)) in chapters.iter().enumerate() {
        let mut paragraph = String::new();
        let mut number = 0;
        for s in scan(content) {
            if s.inside || s.text.trim().is_empty() {
                paragraph.clear();
                continue;
            }
            let mut done = 0;
            for (start, end, names) in marks(s.text) {
                paragraph.push_str(&s.text[done..start]);
                paragraph.truncate(paragraph.trim_end().len()); // as shown
                done = end;
                number += 1;
                if names.is_empty() {
                    errors.push(format!(
                        "{path}: `{}` names no test; write {{{{#claim \
                         test_name}}}} after the sentence it backs",
                        s.text[start..end].trim()
                    ));
                }
                for name in &names {
                    if resolve(name, tests).is_empty() {
                        errors.push(format!(
                            "{path}: the claim mark names `{name}`, but no \
                             #[test] fn {} exists in the workspace{}",
                            function_name(name),
                            if name.contains("::") {
                                " in that module"
                            } else {
                                ""
                            }
                        ));
                    }
                }
                claims.push(Claim {
                    chapter,
                    number,
                    sentence: last_sentence(&paragraph),
                    tests: names.iter().map(|n| n.to_string()).collect(),
                });
            }
            paragraph.push_str(&s.text[done..]);
            paragraph.push(' ');
        }
    }
    claims
}

/// The last sentence of the prose before a mark: from the end of the
/// sentence before it (., ? or ! and a space) to the end.
/// Abbreviations whose stop ends no sentence.
const ABBREVIATIONS: [&str; 6] = ["al.", "e.g.", "i.e.", "cf.", "Eq.", "Fig."];

fn last_sentence(before: &str) -> String {
    let text = before.split_whitespace().collect::<Vec<_>>().join(" ");
    let body = text.trim_end_matches(['.', '?', '!', ':', ';', ',']);
    // A stop inside a code span (`1. `) ends no sentence: only stops
    // after an even number of backticks count. Nor does the stop of an
    // abbreviation ("et al.", "e.g.").
    let abbreviation = |i: usize| {
        ABBREVIATIONS.iter().any(|a| {
            body[..=i].ends_with(a)
                && !body[..i + 1 - a.len()]
                    .ends_with(|c: char| c.is_alphanumeric())
        })
    };
    let start = body
        .char_indices()
        .filter(|&(i, c)| {
            matches!(c, '.' | '?' | '!')
                && body[i + 1..].starts_with(' ')
                && body[..i].matches('`').count() % 2 == 0
                && !abbreviation(i)
        })
        .map(|(i, _)| i + 2)
        .next_back()
        .unwrap_or(0);
    text[start..].trim().to_string()
}

/// The id of a claim's entry in the appendix, and of its mark.
fn entry_id(claim: &Claim) -> String {
    format!("claim-{}-{}", claim.chapter, claim.number)
}

/// The id of a test's evidence on a chapter page (the page's store of
/// evidence holds each test once).
fn test_id(name: &str) -> String {
    format!("claim-test-{}", name.replace("::", "--"))
}

/// The second pass, on one line of prose: every mark becomes a small link
/// to its entry, bound to the word before it by a word joiner (U+2060)
/// so that it never starts a line. `claims` are this chapter's, in order;
/// `next` counts the marks already expanded. `page` is the appendix as a
/// link from here; `result` says, for a mark's tests, how they fared in
/// the run that built the book.
pub(crate) fn expand_marks(
    text: &str,
    claims: &[&Claim],
    next: &mut usize,
    page: Option<&str>,
    result: &dyn Fn(&[String]) -> String,
) -> String {
    let mut out = String::new();
    let mut done = 0;
    for (start, end, _) in marks(text) {
        out.push_str(text[done..start].trim_end());
        done = end;
        let Some(claim) = claims.get(*next) else {
            continue;
        };
        *next += 1;
        let id = entry_id(claim);
        let tests = claim.tests.join(", ");
        let ids: Vec<String> = claim.tests.iter().map(|t| test_id(t)).collect();
        let page = page.unwrap_or_default();
        let result = result(&claim.tests);
        let _ = write!(
            out,
            "\u{2060}<sup class=\"claim\" id=\"mark-{id}\" \
             data-tests=\"{}\">[✓]({page}#{id} \"Checked by {tests}: \
             {result}\")</sup>",
            ids.join(" ")
        );
    }
    out.push_str(&text[done..]);
    out
}

/// What a page says of one test named by a mark: where it is, its code,
/// the kind of evidence, the command that reruns it, and its result.
pub(crate) struct Evidence {
    pub(crate) name: String,
    pub(crate) file: String,
    pub(crate) line: usize,
    pub(crate) source: String,
    /// A test of the build itself, whose code is named, not quoted.
    pub(crate) builds_own: bool,
    /// The kind of evidence, as Markdown.
    pub(crate) kind: String,
    pub(crate) command: String,
    pub(crate) outcome: Outcome,
}

impl Evidence {
    /// The result in words, with the run it comes from.
    fn result(&self, record: Option<&Record>) -> String {
        result_words(self.outcome, record)
    }
}

/// An outcome in words, with the run it comes from.
fn result_words(outcome: Outcome, record: Option<&Record>) -> String {
    let Some(record) = record else {
        return "not run in this build (built without a record of the \
                tests; `cargo xtask test` builds the book with one)"
            .to_string();
    };
    let run = record.run_name();
    match outcome {
        Outcome::Passed => format!("passed in {run}"),
        Outcome::Failed => format!("FAILED in {run}"),
        Outcome::Ignored => format!("ignored (not run) in {run}"),
        Outcome::NotRun => format!("not run: {run} does not hold it"),
    }
}

/// The id of a test's first entry on an appendix page, where its code is.
fn source_id(e: &Evidence) -> String {
    format!("code-{}-{}", e.file.replace(['/', '.'], "-"), e.line)
}

/// The way from a chapter at `path` back to the book's root: `../` per
/// folder.
fn to_root(path: &str) -> String {
    "../".repeat(path.matches('/').count())
}

/// Where the rustdoc source pages of the crate `listings` are, in the
/// built book (`cargo xtask build` copies them there).
pub const RUSTDOC: &str = "rustdoc/src/listings/";

/// A test's `file:line`: for a file of the crate `listings`, a link to
/// that line of its page in the rustdoc source view shipped with the book.
fn source_link(file: &str, line: usize, to_root: &str) -> String {
    let shown = format!("{file}:{line}");
    match file.strip_prefix("listings/src/") {
        Some(rest) => format!(
            "<a class=\"claim-place\" href=\"{to_root}{RUSTDOC}{rest}.html#{line}\">\
             {shown}</a>"
        ),
        None => format!("<span class=\"claim-place\">{shown}</span>"),
    }
}

/// Markdown with code spans, as HTML (for lines inside an HTML block,
/// where Markdown is not read).
fn inline_html(markdown: &str) -> String {
    markdown
        .split('`')
        .enumerate()
        .map(|(i, part)| {
            let part = crate::escape::html(part);
            if i % 2 == 1 {
                format!("<code>{part}</code>")
            } else {
                part
            }
        })
        .collect()
}

/// The build's own checks (the `xtask` crate) and this preprocessor are
/// tested on small books whose directives mdBook would expand, or refuse,
/// if their source were quoted in the appendix: their tests are named, not
/// quoted.
fn is_the_builds_own(file: &str) -> bool {
    ["crates/xtask/", "crates/mdbook-listings/"]
        .iter()
        .any(|dir| file.starts_with(dir))
}

/// Is this line an appendix page's directive? `{{#claims}}` lists the
/// marks of every chapter no other page takes; `{{#claims FOLDER}}` those
/// of the chapters under `src/FOLDER/` (one part of the book per page).
/// The folder, or `""`, if it is.
pub(crate) fn page_filter(s: &Scanned<'_>) -> Option<String> {
    if s.inside {
        return None;
    }
    let text = s.text.trim();
    if text == PAGE {
        return Some(String::new());
    }
    let folder = text.strip_prefix("{{#claims ")?.strip_suffix("}}")?.trim();
    (!folder.is_empty() && !folder.contains(char::is_whitespace))
        .then(|| folder.trim_end_matches('/').to_string())
}

/// The appendix page that lists the marks of the chapter at `path`: the
/// page for its folder, else the page for every other chapter.
fn page_for(pages: &[(usize, String)], path: &str) -> Option<usize> {
    let folder =
        |f: &String| !f.is_empty() && path.starts_with(&format!("{f}/"));
    pages
        .iter()
        .find(|(_, f)| folder(f))
        .or_else(|| pages.iter().find(|(_, f)| f.is_empty()))
        .map(|(i, _)| *i)
}

/// Is this line the verification report's directive?
pub(crate) fn is_report(s: &Scanned<'_>) -> bool {
    !s.inside && s.text.trim() == REPORT
}

/// The claim marks of the whole book, the tests they name, and the page
/// that lists them.
pub(crate) struct Claims {
    marks: Vec<Claim>,
    /// Each name a mark uses, with the evidence of every test it means.
    evidence: BTreeMap<String, Vec<Evidence>>,
    /// The chapters holding `{{#claims}}` or `{{#claims FOLDER}}`, with
    /// the folder (`""` for the page of every other chapter).
    pages: Vec<(usize, String)>,
    /// Each chapter's path and title (its first `# ` heading).
    chapters: Vec<(String, String)>,
    /// The record of the test run the book is built with, if any.
    record: Option<Record>,
}

impl Claims {
    /// The first pass: every mark of the book, its tests found in the
    /// workspace (the folder above `src`), and the appendix page.
    /// `record` is the test run the book is built with: a marked test
    /// that failed in it fails the build.
    pub(crate) fn collect(
        chapters: &[Chapter],
        src: &Path,
        record: Option<Record>,
        errors: &mut Vec<String>,
    ) -> Claims {
        let root = src.parent().unwrap_or(src);
        let uses = |c: &&Chapter| c.content.contains("{{#claim");
        let tests = if chapters.iter().any(|c| uses(&c)) {
            find_tests(root)
        } else {
            Default::default()
        };
        let contents: Vec<(&str, &str)> = chapters
            .iter()
            .map(|c| (c.path.as_str(), c.content.as_str()))
            .collect();
        let marks = collect(&contents, &tests, errors);
        let readers = if marks.is_empty() {
            Default::default()
        } else {
            verify::data_readers(root)
        };
        let mut evidence: BTreeMap<String, Vec<Evidence>> = BTreeMap::new();
        for claim in &marks {
            for name in &claim.tests {
                if evidence.contains_key(name) {
                    continue;
                }
                let function = function_name(name);
                let found = resolve(name, &tests)
                    .into_iter()
                    .map(|test| {
                        let (outcome, path) =
                            verify::outcome(record.as_ref(), function, test);
                        let command = verify::place(function, test)
                            .map(|p| {
                                let path = path.unwrap_or(p.path.clone());
                                verify::command(&p, &path, test)
                            })
                            .unwrap_or_else(|| {
                                format!("cargo test --workspace {function}")
                            });
                        Evidence {
                            name: function.to_string(),
                            file: test.file.clone(),
                            line: test.line,
                            source: test.source.clone(),
                            builds_own: is_the_builds_own(&test.file),
                            kind: verify::kind(test, &readers, root).describe(),
                            command,
                            outcome,
                        }
                    })
                    .collect();
                evidence.insert(name.clone(), found);
            }
        }
        if record.is_some() {
            for claim in &marks {
                let path = &chapters[claim.chapter].path;
                for name in &claim.tests {
                    for e in &evidence[name] {
                        if e.outcome == Outcome::Failed {
                            errors.push(format!(
                                "{path}: the claim mark names `{name}`, which \
                                 FAILED in the test run the book is built \
                                 with ({}:{}); a failed claim is not \
                                 published",
                                e.file, e.line
                            ));
                        }
                    }
                }
            }
            errors.dedup();
        }
        let pages: Vec<(usize, String)> = chapters
            .iter()
            .enumerate()
            .flat_map(|(i, c)| {
                scan(&c.content)
                    .iter()
                    .filter_map(page_filter)
                    .map(|f| (i, f))
                    .collect::<Vec<_>>()
            })
            .collect();
        for claim in &marks {
            if page_for(&pages, &chapters[claim.chapter].path).is_none() {
                errors.push(format!(
                    "{}: the chapter has claim marks but no page with \
                     {{{{#claims}}}} for them to link to; add one to \
                     SUMMARY.md",
                    chapters[claim.chapter].path
                ));
                break;
            }
        }
        let titles = chapters
            .iter()
            .map(|c| {
                let title = c
                    .content
                    .lines()
                    .find_map(|l| l.strip_prefix("# "))
                    .unwrap_or(&c.path);
                (c.path.clone(), title.trim().to_string())
            })
            .collect();
        Claims {
            marks,
            evidence,
            pages,
            chapters: titles,
            record,
        }
    }

    /// The marks of the chapter with index `chapter`, in order.
    pub(crate) fn of_chapter(&self, chapter: usize) -> Vec<&Claim> {
        self.marks.iter().filter(|c| c.chapter == chapter).collect()
    }

    /// The appendix page as a link from the chapter at `from`, given
    /// every chapter's path.
    pub(crate) fn page_link(
        &self,
        from: &str,
        paths: &[String],
    ) -> Option<String> {
        page_for(&self.pages, from)
            .map(|p| reference::relative(from, &paths[p]))
    }

    /// How the tests of one mark fared, in words: the worst outcome of
    /// any of them.
    pub(crate) fn result_of(&self, names: &[String]) -> String {
        let worst = names
            .iter()
            .flat_map(|n| self.evidence.get(n).into_iter().flatten())
            .map(|e| e.outcome)
            .max()
            .unwrap_or(Outcome::NotRun);
        result_words(worst, self.record.as_ref())
    }

    /// The evidence of every test the marks of chapter `chapter` name,
    /// each test once, in a hidden block at the end of its page: a mark
    /// opens its tests' evidence from here (theme/claims.js). Nothing
    /// without marks, and nothing under `mdbook test`.
    pub(crate) fn store(&self, chapter: usize, sources: bool) -> String {
        let marks = self.of_chapter(chapter);
        if marks.is_empty() || !sources {
            return String::new();
        }
        let mut out = String::from("\n<div class=\"claim-store\" hidden>\n\n");
        let mut seen = std::collections::BTreeSet::new();
        for name in marks.iter().flat_map(|c| &c.tests) {
            if !seen.insert(name) {
                continue;
            }
            let _ = writeln!(
                out,
                "<div class=\"claim-test\" id=\"{}\">\n",
                test_id(name)
            );
            for e in &self.evidence[name] {
                self.evidence_html(
                    &mut out,
                    e,
                    &to_root(&self.chapters[chapter].0),
                );
            }
            out.push_str("</div>\n\n");
        }
        out.push_str("</div>\n");
        out
    }

    /// One test's evidence, as HTML and a folded code block.
    fn evidence_html(&self, out: &mut String, e: &Evidence, to_root: &str) {
        let result = e.result(self.record.as_ref());
        let place = source_link(&e.file, e.line, to_root);
        let class = match e.outcome {
            Outcome::Passed => "passed",
            Outcome::Failed => "failed",
            _ => "not-run",
        };
        let _ = writeln!(
            out,
            "<div class=\"claim-evidence\">\n\
             <p class=\"claim-name\"><code>{}</code>, {place}</p>\n\
             <p class=\"claim-kind\">Evidence: {}</p>\n\
             <p class=\"claim-result claim-{class}\">Result: {}</p>\n\
             <p class=\"claim-command\">Rerun it: <code>{}</code></p>",
            e.name,
            inline_html(&e.kind),
            inline_html(&result),
            crate::escape::html(&e.command),
        );
        if e.builds_own {
            let _ = writeln!(
                out,
                "<p class=\"claim-body\">(A test of the build itself: it \
                 builds small books, and its code is not quoted here; it \
                 is at {}:{}.)</p>\n</div>\n",
                e.file, e.line
            );
        } else {
            let code = e.source.replace("{{#", "\\{{#");
            let _ = writeln!(
                out,
                "<details class=\"claim-body\"><summary>The test's code\
                 </summary>\n\n```rust,noplayground\n{code}\n```\n\n\
                 </details>\n</div>\n"
            );
        }
    }

    /// The appendix, as Markdown, for the page at `here`: chapter by
    /// chapter, each marked sentence with a link back, and each test with
    /// its place, kind of evidence, command, result and (folded) code.
    /// `sources` says whether to quote the tests' code (not for
    /// `mdbook test`, where rustdoc would try to compile it).
    pub(crate) fn appendix(&self, here: &str, sources: bool) -> String {
        let mine = |c: &&Claim| {
            page_for(&self.pages, &self.chapters[c.chapter].0)
                .is_some_and(|p| self.chapters[p].0 == here)
        };
        let marks: Vec<&Claim> = self.marks.iter().filter(mine).collect();
        let mut shown = std::collections::BTreeSet::new();
        let mut out = String::new();
        let _ = writeln!(
            out,
            "Marked sentences: {}. A sentence of the book followed by the \
             mark <sup class=\"claim\">✓</sup> is checked by the tests it \
             names. Each entry quotes the sentence, links back to it, and \
             names each test, where it is, the kind of evidence it is, the \
             command that reruns it, its result in the run that built this \
             page, and its code. `cargo xtask build` fails if a named test \
             does not exist; `cargo xtask test` fails if it did not run. \
             A test's code is shown once on this page, at its first entry.\n",
            marks.len()
        );
        let mut last = None;
        for claim in marks {
            let (path, title) = &self.chapters[claim.chapter];
            if last != Some(claim.chapter) {
                let _ = writeln!(out, "## {title}\n");
                last = Some(claim.chapter);
            }
            let id = entry_id(claim);
            let back = reference::relative(here, path);
            let _ = writeln!(
                out,
                "<div class=\"claim-entry\" id=\"{id}\">\n\n> {} \
                 [(in the chapter)]({back}#mark-{id})\n",
                claim.sentence
            );
            for name in &claim.tests {
                for e in &self.evidence[name] {
                    if sources {
                        let first = shown.insert((&e.file, e.line));
                        let start = out.len();
                        self.evidence_html(&mut out, e, &to_root(here));
                        if first {
                            let tag = "<div class=\"claim-evidence\">";
                            let with_id = format!(
                                "<div class=\"claim-evidence\" id=\"{}\">",
                                source_id(e)
                            );
                            out.replace_range(
                                start..start + tag.len(),
                                &with_id,
                            );
                        } else {
                            // The code once per page: later entries point
                            // to the first.
                            // Only this entry's own code (a test of the
                            // build has none).
                            let cut = out[start..]
                                .find("<details class=\"claim-body\"")
                                .map(|at| start + at);
                            if let Some(cut) = cut {
                                out.truncate(cut);
                                let _ = writeln!(
                                    out,
                                    "<p class=\"claim-body\">Its code is \
                                     shown above, at this test's first entry \
                                     on this page ({}).</p>\n</div>\n",
                                    e.name
                                );
                            }
                        }
                        out.push('\n');
                    } else {
                        let _ = writeln!(
                            out,
                            "<code>{}</code>, {}:{}\n",
                            e.name, e.file, e.line
                        );
                    }
                }
            }
            out.push_str("</div>\n\n");
        }
        out
    }

    /// The verification report, as Markdown: the run the book was built
    /// with, and chapter by chapter the tests its marks name, how many
    /// ran and passed, and which did not run.
    pub(crate) fn report(&self, here: &str) -> String {
        let mut out = String::new();
        let Some(record) = &self.record else {
            out.push_str(
                "This book was built without a record of its tests: they \
                 were not run in this build, and no claim mark says they \
                 passed. `cargo xtask test` runs every test first and then \
                 builds the book with their record, and this page lists \
                 what that run found.\n",
            );
            return out;
        };
        let (passed, failed, ignored) = record.counts();
        let _ = writeln!(
            out,
            "This book was built from {}, after its tests ran there.\n\n\
             | | |\n|---|---|\n\
             | Commit | `{}` |\n| Date | {} |\n| Machine | {} |\n\
             | Time taken | {} |\n| Command | `{}` |\n\
             | Tests run | {} passed, {} failed, {} ignored |\n",
            record.run_name(),
            record.commit,
            record.date,
            record.machine,
            record.duration,
            record.command,
            passed,
            failed,
            ignored,
        );
        out.push_str(
            "The tests the claim marks name, by chapter (a test named by \
             several marks counts once per chapter):\n\n\
             | Chapter | Marks | Tests named | Passed | Not run |\n\
             |---|---|---|---|---|\n",
        );
        let mut unrun = Vec::new();
        for (chapter, (path, title)) in self.chapters.iter().enumerate() {
            let marks = self.of_chapter(chapter);
            if marks.is_empty() {
                continue;
            }
            let mut names: Vec<&String> =
                marks.iter().flat_map(|c| &c.tests).collect();
            names.sort();
            names.dedup();
            let outcomes: Vec<Outcome> = names
                .iter()
                .map(|n| {
                    self.evidence[*n]
                        .iter()
                        .map(|e| e.outcome)
                        .max()
                        .unwrap_or(Outcome::NotRun)
                })
                .collect();
            let count = |o| outcomes.iter().filter(|x| **x == o).count();
            let not_run = names.len() - count(Outcome::Passed);
            for (n, o) in names.iter().zip(&outcomes) {
                if *o != Outcome::Passed {
                    unrun.push(format!("`{n}` ({title}): {}", o.word()));
                }
            }
            let link = reference::relative(here, path);
            let _ = writeln!(
                out,
                "| [{title}]({link}) | {} | {} | {} | {not_run} |",
                marks.len(),
                names.len(),
                count(Outcome::Passed),
            );
        }
        out.push('\n');
        if unrun.is_empty() {
            out.push_str("Every test a claim mark names passed in this run.\n");
        } else {
            out.push_str("Marked tests that did not pass in this run:\n\n");
            for u in unrun {
                let _ = writeln!(out, "- {u}");
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{chapter, run, scratch};
    use serde_json::{Value, json};

    const CODE: &str = "fn helper() {}\n\n#[cfg(test)]\nmod tests {\n    \
        #[test]\n    #[ignore = \"slow\"]\n    fn rows_sum_to_one() {\n        \
        let x = 1;\n        assert_eq!(x, 1);\n    }\n\n    #[test]\n    \
        fn other() {}\n}\n";

    #[test]
    fn tests_are_found_with_file_line_and_source() {
        let found = tests_in("a/b.rs", CODE);
        assert_eq!(found.len(), 2);
        let (name, test) = &found[0];
        assert_eq!(name, "rows_sum_to_one");
        assert_eq!(test.line, 7);
        assert!(test.source.starts_with("#[test]\n#[ignore"));
        assert!(test.source.ends_with("assert_eq!(x, 1);\n}"), "{test:?}");
        assert_eq!(found[1].1.source, "#[test]\nfn other() {}");
    }

    #[test]
    fn a_stop_inside_a_code_span_ends_no_sentence() {
        let before = "First one. A line starting `1. ` or `- ` fails.";
        assert_eq!(
            last_sentence(before),
            "A line starting `1. ` or `- ` fails."
        );
    }

    #[test]
    fn the_sentence_before_a_mark_is_quoted() {
        let s = last_sentence("First one. The rows sum to\n  one. ");
        assert_eq!(s, "The rows sum to one.");
        assert_eq!(last_sentence("Only $x_1.5$ here"), "Only $x_1.5$ here");
        let cited = "Before. As Katharopoulos et al. (2020) show, e.g. here.";
        assert_eq!(
            last_sentence(cited),
            "As Katharopoulos et al. (2020) show, e.g. here."
        );
        assert_eq!(last_sentence("A Beal. Then b."), "Then b.");
        let md = "# A\n\nIt cancels {{#claim a}}, and stays. {{#claim b}}\n";
        let tests = BTreeMap::from([
            ("a".to_string(), vec![]),
            ("b".to_string(), vec![]),
        ]);
        let claims = collect(&[("a.md", md)], &tests, &mut Vec::new());
        assert_eq!(claims[0].sentence, "It cancels");
        assert_eq!(claims[1].sentence, "It cancels, and stays.");
    }

    fn book_with(mark: &str) -> (PathBuf, Result<Vec<String>, Vec<String>>) {
        let src = scratch(&format!("claims-{}", mark.len()));
        std::fs::write(src.join("../code/tests.rs"), CODE).unwrap();
        let one = format!(
            "# One\n\nIntro. Rows sum to one. {mark}\nNext.\n\n```\n\
             {{{{#claim nope}}}}\n```\n"
        );
        let out = run(
            &src,
            vec![
                chapter("One", "part/one.md", json!([1]), &one),
                chapter(
                    "Claims",
                    "claims.md",
                    Value::Null,
                    "# Claims and their tests\n\n{{#claims}}\n",
                ),
            ],
        );
        (src, out)
    }

    #[test]
    fn a_mark_links_to_its_entry_and_the_entry_back() {
        let (_, out) = book_with("{{#claim rows_sum_to_one other}}");
        let out = out.unwrap();
        assert!(
            out[0].contains(
                "Rows sum to one.\u{2060}<sup class=\"claim\" \
                 id=\"mark-claim-0-1\" data-tests=\"claim-test-rows_sum_to_one \
                 claim-test-other\">[✓](../claims.md#claim-0-1 \"Checked by \
                 rows_sum_to_one, other: not run in this build"
            ),
            "{}",
            out[0]
        );
        assert!(out[0].contains("{{#claim nope}}"), "code is left alone");
        let store = &out[0][out[0]
            .find("<div class=\"claim-store\" hidden>")
            .expect("the chapter ends with its tests' evidence")..];
        for part in [
            "<div class=\"claim-test\" id=\"claim-test-rows_sum_to_one\">",
            "<p class=\"claim-kind\">Evidence: recomputed when the book is \
             built</p>",
            "<p class=\"claim-result claim-not-run\">Result: not run in this \
             build",
            "<p class=\"claim-command\">Rerun it: <code>cargo test \
             --workspace rows_sum_to_one</code>",
            "<details class=\"claim-body\"><summary>The test's code</summary>\
             \n\n```rust,noplayground\n#[test]",
        ] {
            assert!(store.contains(part), "{part}\n{store}");
        }
        assert_eq!(store.matches("fn rows_sum_to_one()").count(), 1);
        let page = &out[1];
        assert!(page.contains("## One\n"), "{page}");
        assert!(page.contains("id=\"claim-0-1\""), "{page}");
        assert!(
            page.contains(
                "> Rows sum to one. [(in the chapter)]\
                 (part/one.md#mark-claim-0-1)"
            ),
            "{page}"
        );
        assert!(page.contains(
            "<p class=\"claim-name\"><code>rows_sum_to_one</code>, <span \
             class=\"claim-place\">code/tests.rs:7</span></p>"
        ));
        assert!(page.contains("\nfn rows_sum_to_one() {"), "{page}");
        assert!(page.contains(
            "<code>other</code>, <span class=\"claim-place\">code/tests.rs:13"
        ));
        let (_, out) = book_with("{{#claim code::tests::other}}");
        assert!(out.unwrap()[1].contains(
            "<code>other</code>, <span class=\"claim-place\">code/tests.rs"
        ));
        let (_, out) = book_with("{{#claim lib::other}}");
        assert!(out.unwrap_err()[0].contains(
            "fn other exists in the \
             workspace in that module"
        ));
    }

    #[test]
    fn the_builds_own_tests_are_named_not_quoted() {
        let src = scratch("claims-own");
        for dir in ["crates/xtask/tests", "crates/mdbook-listings/src"] {
            let dir = src.join("..").join(dir);
            std::fs::create_dir_all(&dir).unwrap();
            let code = CODE.replace("rows_sum_to_one", "checks_the_build");
            std::fs::write(dir.join("t.rs"), code).unwrap();
        }
        std::fs::write(src.join("../code/tests.rs"), CODE).unwrap();
        let one = "# One\n\nIt checks. {{#claim checks_the_build}}\n\
                   Rows sum to one. {{#claim rows_sum_to_one}}\n\
                   Again. {{#claim checks_the_build}}\n";
        let out = run(
            &src,
            vec![
                chapter("One", "part/one.md", json!([1]), one),
                chapter(
                    "Claims",
                    "claims.md",
                    Value::Null,
                    "# Claims and their tests\n\n{{#claims}}\n",
                ),
            ],
        )
        .unwrap();
        let page = &out[1];
        for file in
            ["crates/xtask/tests/t.rs", "crates/mdbook-listings/src/t.rs"]
        {
            assert!(
                page.contains(&format!(
                    "<code>checks_the_build</code>, <span \
                     class=\"claim-place\">{file}:7</span>"
                )),
                "{page}"
            );
        }
        assert!(page.contains("(A test of the build itself"), "{page}");
        // A test of the build named twice keeps every entry whole.
        for id in ["claim-0-1", "claim-0-2", "claim-0-3"] {
            assert!(page.contains(&format!("id=\"{id}\"")), "{id}: {page}");
        }
        assert!(!page.contains("fn checks_the_build()"), "{page}");
        assert!(page.contains("\nfn rows_sum_to_one() {"), "{page}");
    }

    #[test]
    fn a_mark_naming_a_missing_test_fails_the_build() {
        let (_, out) = book_with("{{#claim rows_sum_to_once}}");
        let errors = out.unwrap_err();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].contains(
                "part/one.md: the claim mark names `rows_sum_to_once`, but \
                 no #[test] fn rows_sum_to_once exists"
            ),
            "{errors:?}"
        );
        let (_, out) = book_with("{{#claim }}");
        assert!(out.unwrap_err()[0].contains("names no test"));
    }

    /// A book whose one chapter, in the package `listings`, marks a
    /// sentence with `rows_sum_to_one`, and a report page, built with a
    /// record in which that test had `outcome`.
    fn recorded(outcome: &str) -> Result<Vec<String>, Vec<String>> {
        let src = scratch(&format!("claims-record-{outcome}"));
        let dir = src.join("../listings/src/m3");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("cost.rs"), CODE).unwrap();
        let record = format!(
            "# commit: 0123456789abcdef0123456789abcdef01234567\n\
             # date: 2026-12-02 13:40 UTC\n# machine: AMD EPYC (2 cores)\n\
             # duration: 312 s\n# command: cargo test --workspace\n\
             {outcome}\tlistings:src/lib.rs\tm3::cost::tests::rows_sum_to_one\n\
             ok\tlistings:src/lib.rs\tm3::cost::tests::other\n"
        );
        crate::test_support::run_recorded(
            &src,
            vec![
                chapter(
                    "One",
                    "part/one.md",
                    json!([1]),
                    "# One\n\nRows sum to one. {{#claim rows_sum_to_one}}\n",
                ),
                chapter(
                    "Claims",
                    "claims.md",
                    Value::Null,
                    "# Claims and their tests\n\n{{#claims}}\n",
                ),
                chapter(
                    "Report",
                    "report.md",
                    Value::Null,
                    "# Verification report\n\n{{#verification}}\n",
                ),
            ],
            &record,
        )
    }

    #[test]
    fn a_book_built_with_a_record_says_each_marks_result() {
        let out = recorded("ok").unwrap();
        let run = "the test run of commit 0123456789ab on 2026-12-02 13:40 UTC";
        assert!(
            out[0].contains(&format!(
                "\"Checked by rows_sum_to_one: passed in {run}\")"
            )),
            "{}",
            out[0]
        );
        for part in [
            &format!("claim-passed\">Result: passed in {run}</p>"),
            "Rerun it: <code>cargo test -p listings --lib \
             m3::cost::tests::rows_sum_to_one -- --exact --ignored</code>",
            "<a class=\"claim-place\" \
             href=\"../rustdoc/src/listings/m3/cost.rs.html#7\">\
             listings/src/m3/cost.rs:7</a>",
        ] {
            assert!(out[0].contains(part), "{part}\n{}", out[0]);
        }
        let report = &out[2];
        for part in [
            "| Commit | `0123456789abcdef0123456789abcdef01234567` |",
            "| Machine | AMD EPYC (2 cores) |",
            "| Time taken | 312 s |",
            "| Tests run | 2 passed, 0 failed, 0 ignored |",
            "| [One](part/one.md) | 1 | 1 | 1 | 0 |",
            "Every test a claim mark names passed in this run.",
        ] {
            assert!(report.contains(part), "{part}\n{report}");
        }
        let out = recorded("ignored").unwrap();
        assert!(out[2].contains("| [One](part/one.md) | 1 | 1 | 0 | 1 |"));
        assert!(out[2].contains("- `rows_sum_to_one` (One): ignored"));
    }

    #[test]
    fn a_book_built_without_a_record_never_says_passed() {
        let (_, out) = book_with("{{#claim rows_sum_to_one}}");
        let out = out.unwrap();
        assert!(out[0].contains("not run in this build"), "{}", out[0]);
        assert!(!out[0].contains("passed"), "{}", out[0]);
    }

    #[test]
    fn a_failed_marked_test_in_the_record_fails_the_build() {
        let errors = recorded("FAILED").unwrap_err();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].contains(
                "part/one.md: the claim mark names `rows_sum_to_one`, which \
                 FAILED in the test run the book is built with \
                 (listings/src/m3/cost.rs:7)"
            ),
            "{errors:?}"
        );
    }

    #[test]
    fn each_part_of_the_book_has_its_own_claims_page_with_code_once() {
        let src = scratch("claims-split");
        std::fs::write(src.join("../code/tests.rs"), CODE).unwrap();
        let page = |title: &str, path: &str, directive: &str| {
            chapter(
                title,
                path,
                Value::Null,
                &format!("# {title}\n\n{directive}\n"),
            )
        };
        let out = run(
            &src,
            vec![
                chapter(
                    "A",
                    "m3/a.md",
                    json!([1]),
                    "# A\n\nOne. {{#claim other}} Two. {{#claim other}}\n",
                ),
                chapter(
                    "B",
                    "paper/b.md",
                    json!([2]),
                    "# B\n\nThree. {{#claim other}}\n",
                ),
                page("Claims", "claims.md", "{{#claims}}"),
                page("Claims of Part I", "claims-m3.md", "{{#claims m3}}"),
            ],
        )
        .unwrap();
        assert!(out[0].contains("(../claims-m3.md#claim-0-1"), "{}", out[0]);
        assert!(out[1].contains("(../claims.md#claim-1-1"), "{}", out[1]);
        let (rest, part) = (&out[2], &out[3]);
        assert!(part.contains("id=\"claim-0-2\""), "{part}");
        assert!(!part.contains("claim-1-1"), "{part}");
        assert!(
            rest.contains("id=\"claim-1-1\"") && !rest.contains("claim-0-1")
        );
        assert_eq!(part.matches("fn other()").count(), 1, "{part}");
        assert!(part.contains("id=\"code-code-tests-rs-13\""), "{part}");
        assert!(part.contains("shown above, at this test's first entry"));
    }

    #[test]
    fn a_mark_on_its_own_line_joins_the_sentence_before_it() {
        let (_, out) = book_with("\n{{#claim rows_sum_to_one}}");
        let out = out.unwrap();
        assert!(
            out[0].contains("Rows sum to one.\u{2060}<sup class=\"claim\""),
            "{}",
            out[0]
        );
        // After a line that starts with inline math, too.
        let (_, out) = book_with("$x$ too.\n{{#claim rows_sum_to_one}}");
        let out = out.unwrap();
        assert!(out[0].contains("$x$ too.\u{2060}<sup"), "{}", out[0]);
    }

    #[test]
    fn marked_tests_lists_every_name_outside_code() {
        let md = "A. {{#claim a b}} B {{#claim c}}\n```\n{{#claim d}}\n```\n";
        assert_eq!(marked_tests(md), ["a", "b", "c"]);
    }
}
