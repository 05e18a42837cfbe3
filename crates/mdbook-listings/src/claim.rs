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
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

const MARK: &str = "{{#claim ";
const PAGE: &str = "{{#claims}}";

/// A test function found in the workspace's sources.
#[derive(Clone, Debug, PartialEq)]
pub struct Test {
    /// Its file, relative to the workspace, with `/`.
    pub file: String,
    /// The line of its `fn`, from 1.
    pub line: usize,
    /// From its `#[test]` to its closing brace.
    pub source: String,
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
        for (name, test) in tests_in(&file, &text) {
            tests.entry(name).or_default().push(test);
        }
    }
    tests
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
                source,
            },
        ));
    }
    found
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

/// The second pass, on one line of prose: every mark becomes a small link
/// to its entry. `claims` are this chapter's, in order; `next` counts the
/// marks already expanded. `page` is the appendix as a link from here.
pub(crate) fn expand_marks(
    text: &str,
    claims: &[&Claim],
    next: &mut usize,
    page: Option<&str>,
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
        let page = page.unwrap_or_default();
        let _ = write!(
            out,
            "<sup class=\"claim\" id=\"mark-{id}\">[✓]({page}#{id} \
             \"Checked by {tests}\")</sup>"
        );
    }
    out.push_str(&text[done..]);
    out
}

/// The appendix: chapter by chapter, each marked sentence with a link
/// back, its tests' files and lines, and each test's source collapsed.
/// `chapters` are (path, title) of every chapter; `here` is the appendix's
/// path; `sources` says whether to show the tests' code (not for
/// `mdbook test`, where rustdoc would try to compile it).
fn appendix(
    claims: &[Claim],
    chapters: &[(String, String)],
    here: &str,
    tests: &BTreeMap<String, Vec<Test>>,
    sources: bool,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Marked sentences: {}. A sentence of the book followed by the mark \
         <sup class=\"claim\">✓</sup> is checked by the tests it names. \
         Each entry quotes the sentence, \
         links back to it, and names each test, where it is, and its \
         code. `cargo xtask build` fails if a named test does not exist; \
         `cargo xtask test` fails if it did not run.\n",
        claims.len()
    );
    let mut last = None;
    for claim in claims {
        let (path, title) = &chapters[claim.chapter];
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
            for test in resolve(name, tests) {
                let name = function_name(name);
                let place =
                    format!("<code>{name}</code>, {}:{}", test.file, test.line);
                if sources && is_the_builds_own(&test.file) {
                    let _ = writeln!(
                        out,
                        "{place} (a test of the build itself: it builds small \
                         books, and its code is not quoted here)\n"
                    );
                } else if sources {
                    let code = test.source.replace("{{#", "\\{{#");
                    let _ = writeln!(
                        out,
                        "<details><summary>{place}</summary>\n\n\
                         ```rust,noplayground\n{code}\n```\n\n</details>\n"
                    );
                } else {
                    let _ = writeln!(out, "{place}\n");
                }
            }
        }
        out.push_str("</div>\n\n");
    }
    out
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

/// Is this line the appendix's directive?
pub(crate) fn is_page(s: &Scanned<'_>) -> bool {
    !s.inside && s.text.trim() == PAGE
}

/// The claim marks of the whole book, the tests they name, and the page
/// that lists them.
pub(crate) struct Claims {
    marks: Vec<Claim>,
    tests: BTreeMap<String, Vec<Test>>,
    /// The chapter holding `{{#claims}}`, if any.
    page: Option<usize>,
    /// Each chapter's path and title (its first `# ` heading).
    chapters: Vec<(String, String)>,
}

impl Claims {
    /// The first pass: every mark of the book, its tests found in the
    /// workspace (the folder above `src`), and the appendix page.
    pub(crate) fn collect(
        chapters: &[Chapter],
        src: &Path,
        errors: &mut Vec<String>,
    ) -> Claims {
        let uses = |c: &&Chapter| c.content.contains("{{#claim");
        let tests = if chapters.iter().any(|c| uses(&c)) {
            find_tests(src.parent().unwrap_or(src))
        } else {
            Default::default()
        };
        let contents: Vec<(&str, &str)> = chapters
            .iter()
            .map(|c| (c.path.as_str(), c.content.as_str()))
            .collect();
        let marks = collect(&contents, &tests, errors);
        let page = chapters
            .iter()
            .position(|c| scan(&c.content).iter().any(is_page));
        if page.is_none() && !marks.is_empty() {
            errors.push(
                "the book has claim marks but no page with {{#claims}} for \
                 them to link to; add one to SUMMARY.md"
                    .to_string(),
            );
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
            tests,
            page,
            chapters: titles,
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
        self.page.map(|p| reference::relative(from, &paths[p]))
    }

    /// The appendix, as Markdown, for the page at `here`; `sources` says
    /// whether to quote the tests' code.
    pub(crate) fn appendix(&self, here: &str, sources: bool) -> String {
        appendix(&self.marks, &self.chapters, here, &self.tests, sources)
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
                "Rows sum to one.<sup class=\"claim\" id=\"mark-claim-0-1\">\
                 [✓](../claims.md#claim-0-1 \"Checked by rows_sum_to_one, \
                 other\")</sup>\nNext."
            ),
            "{}",
            out[0]
        );
        assert!(out[0].contains("{{#claim nope}}"), "code is left alone");
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
            "<details><summary><code>rows_sum_to_one</code>, \
             code/tests.rs:7</summary>\n\n```rust,noplayground\n#[test]"
        ));
        assert!(page.contains("\nfn rows_sum_to_one() {"), "{page}");
        assert!(page.contains("<code>other</code>, code/tests.rs:13"));
        let (_, out) = book_with("{{#claim code::tests::other}}");
        assert!(out.unwrap()[1].contains("<code>other</code>, code/tests.rs"));
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
                   Rows sum to one. {{#claim rows_sum_to_one}}\n";
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
                    "<code>checks_the_build</code>, {file}:7 (a test of the \
                     build itself"
                )),
                "{page}"
            );
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

    #[test]
    fn marked_tests_lists_every_name_outside_code() {
        let md = "A. {{#claim a b}} B {{#claim c}}\n```\n{{#claim d}}\n```\n";
        assert_eq!(marked_tests(md), ["a", "b", "c"]);
    }
}
