//! Checks of the chapters' Markdown, read before mdBook builds them:
//! control characters (a TAB typed where `\top` was meant), collapsed
//! answers that hide what the reader needs, and lines that start a list
//! by accident.

use crate::Failure;
use std::fs;
use std::path::Path;

/// Every control character (TAB, form feed, …, anything but a line end)
/// in the Markdown under `root/src`, as `src/FILE:LINE:COLUMN: U+XXXX
/// before "…"`. A TAB typed where `\top` was meant (an escape that went
/// wrong on the way in) still parses as TeX and renders "op".
pub fn control_characters(root: &Path) -> Result<Vec<String>, Failure> {
    let src = root.join("src");
    let mut problems = Vec::new();
    for path in crate::links::all_files(&src)? {
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let text = fs::read_to_string(&path)?;
        let rel = path.strip_prefix(root).unwrap_or(&path).display();
        for (n, line) in text.split('\n').enumerate() {
            let line = line.strip_suffix('\r').unwrap_or(line);
            for (column, (at, c)) in line.char_indices().enumerate() {
                if c.is_control() {
                    let after: String =
                        line[at + c.len_utf8()..].chars().take(12).collect();
                    problems.push(format!(
                        "{rel}:{}:{}: U+{:04X} {} before \"{after}\"",
                        n + 1,
                        column + 1,
                        u32::from(c),
                        control_name(c)
                    ));
                }
            }
        }
    }
    Ok(problems)
}

/// The most words of prose a collapsed answer (`<details>`) may hold.
pub const MAX_ANSWER_WORDS: usize = 250;

/// The Markdown chapters under `root/src`, with their paths from `root`.
fn chapters(root: &Path) -> Result<Vec<(String, String)>, Failure> {
    let mut out = Vec::new();
    for path in crate::links::all_files(&root.join("src"))? {
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let rel = path.strip_prefix(root).unwrap_or(&path);
        out.push((rel.display().to_string(), fs::read_to_string(&path)?));
    }
    Ok(out)
}

/// Every `<details>` answer in the chapters under `root/src` that holds
/// more than [`MAX_ANSWER_WORDS`] words of prose, or a listing, figure or
/// output, as `src/FILE:LINE: ...` (the line of `<details>`).
pub fn collapsed_answers(root: &Path) -> Result<Vec<String>, Failure> {
    let mut problems = Vec::new();
    for (rel, text) in chapters(root)? {
        for answer in answers(&text) {
            if answer.ok() {
                continue;
            }
            problems.push(format!("{rel}:{}: {}", answer.line, answer.why()));
        }
    }
    Ok(problems)
}

/// What a collapsed answer holds.
#[derive(Debug, Default, PartialEq)]
pub struct Answer {
    /// The line of its `<details>`, from 1.
    pub line: usize,
    /// Words of prose (not code, math blocks, directives or HTML tags).
    pub words: usize,
    pub listings: usize,
    pub figures: usize,
    pub outputs: usize,
}

impl Answer {
    fn ok(&self) -> bool {
        self.words <= MAX_ANSWER_WORDS
            && self.listings + self.figures + self.outputs == 0
    }

    fn why(&self) -> String {
        let mut held = Vec::new();
        for (n, what) in [
            (self.listings, "listing"),
            (self.figures, "figure"),
            (self.outputs, "output"),
        ] {
            if n > 0 {
                held.push(format!(
                    "{n} {what}{}",
                    if n > 1 { "s" } else { "" }
                ));
            }
        }
        let words = format!(
            "{} words of prose{}",
            self.words,
            if self.words > MAX_ANSWER_WORDS {
                format!(" (more than {MAX_ANSWER_WORDS})")
            } else {
                String::new()
            }
        );
        if held.is_empty() {
            format!("a collapsed answer of {words}")
        } else {
            format!("a collapsed answer of {words} holds {}", held.join(", "))
        }
    }
}

/// Every collapsed answer, `<details class="answer">` … `</details>`, of a
/// chapter's Markdown, measured. A collapsed full listing
/// (`<details class="listing">`) is not an answer and may hold code.
pub fn answers(text: &str) -> Vec<Answer> {
    let mut out = Vec::new();
    let mut open: Option<Answer> = None;
    let (mut fence, mut math) = (false, false);
    for (n, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.starts_with("```") || t.starts_with("~~~") {
            if !fence
                && let Some(a) = open.as_mut()
                && text
                    .lines()
                    .skip(n + 1)
                    .take_while(|l| {
                        !l.trim().starts_with("```")
                            && !l.trim().starts_with("~~~")
                    })
                    .any(|l| {
                        l.contains("{{#include")
                            || l.contains("{{#rustdoc_include")
                    })
            {
                a.listings += 1;
            }
            fence = !fence;
            continue;
        }
        if fence {
            continue;
        }
        if !math && t.starts_with("<details class=\"answer\"") {
            open = Some(Answer {
                line: n + 1,
                ..Answer::default()
            });
        }
        let Some(a) = open.as_mut() else { continue };
        if t == "$$"
            || (t.starts_with("$$") && !(t.len() > 2 && t.ends_with("$$")))
        {
            math = !math;
            continue;
        }
        if math || (t.starts_with("$$") && t.ends_with("$$")) {
            continue;
        }
        if t.starts_with("{{#figure") {
            a.figures += 1;
        } else if t.starts_with("{{#output") {
            a.outputs += 1;
        } else if !(t.starts_with("caption:")
            || t.starts_with("alt:")
            || t == "}}")
        {
            a.words += prose_words(t);
        }
        if t.contains("</details>") {
            out.extend(open.take());
        }
    }
    out.extend(open);
    out
}

/// The words of one line of Markdown prose: HTML tags, directives and
/// claim marks removed, and inline math counted as one word.
fn prose_words(line: &str) -> usize {
    let mut text = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(c) = rest.chars().next() {
        let skip_to = match c {
            '<' => rest.find('>').map(|e| e + 1),
            '{' if rest.starts_with("{{#") => rest.find("}}").map(|e| e + 2),
            _ => None,
        };
        match skip_to {
            Some(end) => {
                text.push(' ');
                rest = &rest[end..];
            }
            None => {
                text.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    // Inline math $...$ is one word however many symbols it holds.
    let mut words = 0;
    for (i, part) in text.split('$').enumerate() {
        if i % 2 == 1 {
            words += 1;
        } else {
            words += part
                .split_whitespace()
                .filter(|w| w.chars().any(char::is_alphanumeric))
                .count();
        }
    }
    words
}

/// Lines of prose that Markdown would turn into a list by accident: a line
/// starting `1. `, `1) `, `- `, `* ` or `+ ` right after a line of a
/// paragraph (CommonMark lets those, and only those, interrupt one), as
/// `src/FILE:LINE: "…"`. A paragraph that is itself a list, or whose last
/// line ends with a colon (a list meant as one), is left alone.
pub fn accidental_lists(root: &Path) -> Result<Vec<String>, Failure> {
    let mut problems = Vec::new();
    for (rel, text) in chapters(root)? {
        for (line, words) in list_by_accident(&text) {
            problems.push(format!("{rel}:{line}: \"{words}\""));
        }
    }
    Ok(problems)
}

/// The lines of `text` (numbered from 1) that start a list by accident.
pub fn list_by_accident(text: &str) -> Vec<(usize, String)> {
    let starts_item = |l: &str| {
        let t = l.trim_start();
        l.len() - t.len() < 4
            && (["- ", "* ", "+ ", "1. ", "1) "]
                .iter()
                .any(|p| t.starts_with(p))
                || t.split_once(". ").is_some_and(|(n, _)| {
                    !n.is_empty()
                        && n.len() < 10
                        && n.bytes().all(|b| b.is_ascii_digit())
                }))
    };
    let interrupts = |l: &str| {
        let t = l.trim_start();
        l.len() - t.len() < 4
            && ["- ", "* ", "+ ", "1. ", "1) "]
                .iter()
                .any(|p| t.starts_with(p))
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let (mut fence, mut math) = (false, false);
    // Whether the current paragraph (since the last blank line) is prose
    // that a list item could interrupt.
    let mut paragraph = false;
    for (n, line) in lines.iter().enumerate() {
        let t = line.trim();
        if t.starts_with("```") || t.starts_with("~~~") {
            fence = !fence;
            paragraph = false;
            continue;
        }
        if fence {
            continue;
        }
        if t.starts_with("$$") {
            if !(t.len() > 2 && t.ends_with("$$")) {
                math = !math;
            }
            paragraph = false;
            continue;
        }
        if math {
            continue;
        }
        if t.is_empty() {
            paragraph = false;
            continue;
        }
        if paragraph && interrupts(line) {
            let previous = lines[n - 1].trim_end();
            if !previous.ends_with(':') {
                out.push((n + 1, t.chars().take(60).collect()));
            }
            paragraph = false;
            continue;
        }
        let block = t.starts_with('#')
            || t.starts_with('<')
            || t.starts_with('|')
            || t.starts_with('>')
            || ["{{#figure", "{{#output", "{{#include", "{{#claims"]
                .iter()
                .any(|d| t.starts_with(d))
            || t.starts_with("caption:")
            || t.starts_with("alt:")
            || t == "}}";
        // A paragraph starts with prose; a list stays a list.
        let first = n == 0 || lines[n - 1].trim().is_empty();
        if first {
            paragraph = !block
                && !starts_item(line)
                && line.len() == line.trim_start().len();
        } else if block || starts_item(line) {
            paragraph = false;
        }
    }
    out
}

fn control_name(c: char) -> &'static str {
    match c {
        '\t' => "(TAB; was it \\t…, say \\top or \\times?)",
        '\u{c}' => "(form feed; was it \\f…, say \\frac?)",
        '\u{8}' => "(backspace; was it \\b…, say \\beta or \\bar?)",
        '\u{b}' => "(vertical tab; was it \\v…, say \\vec?)",
        '\u{7}' => "(bell; was it \\a…, say \\alpha?)",
        '\r' => "(carriage return; was it \\r…, say \\right?)",
        _ => "(a control character)",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_found_with_their_place_and_a_hint() {
        let root = std::env::temp_dir().join("xtask-control-characters");
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join("src/part")).unwrap();
        fs::write(root.join("src/clean.md"), "$x^\\top$\r\nok\n").unwrap();
        fs::write(root.join("src/part/bad.md"), "a\n$x^\top$ and \u{c}rac\n")
            .unwrap();
        let found = control_characters(&root).unwrap();
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].starts_with("src/part/bad.md:2:4: U+0009 (TAB"));
        assert!(found[0].ends_with("before \"op$ and \u{c}rac\""));
        assert!(found[1].contains(":2:13: U+000C (form feed; was it \\f"));
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn long_answers_and_answers_holding_items_are_measured() {
        let words = "word ".repeat(251);
        let text = format!(
            "Intro.\n\n<details class=\"answer\">\n<summary>Answer</summary>\n\n\
             A short answer, $x^2 + y$ counted once. {{{{#claim t}}}}\n\
             </details>\n\n<details class=\"answer\">\n<summary>Answer</summary>\n\n{words}\n\
             $$\nnot + counted\n$$\n</details>\n<details class=\"answer\">\n\n\
             ```rust\n{{{{#include a.rs:f}}}}\n```\n\n{{{{#output o}}}}\n\n\
             {{{{#figure f\ncaption: C\nalt: A\n}}}}\n</details>\n\
             <details class=\"listing\">\n<summary>Full listing</summary>\n\n\
             ```rust\n{{{{#include a.rs:g}}}}\n```\n\n{words}\n</details>\n"
        );
        let found = answers(&text);
        assert_eq!(found.len(), 3, "{found:?}");
        assert_eq!((found[0].line, found[0].words), (3, 7), "{found:?}");
        assert!(found[0].ok());
        assert_eq!((found[1].line, found[1].words), (9, 252));
        assert!(
            found[1]
                .why()
                .contains("252 words of prose (more than 250)")
        );
        let held = &found[2];
        assert_eq!((held.listings, held.outputs, held.figures), (1, 1, 1));
        assert!(held.why().contains("holds 1 listing, 1 figure, 1 output"));
    }

    #[test]
    fn a_line_that_would_start_a_list_inside_a_paragraph_is_found() {
        let text = "A paragraph whose memory has values all\n1. The test\n\
                    goes on.\n\nText\n- dash\n\nSteps:\n1. one\n2. two\n\n\
                    - a list\n- goes on\n  continued\n- fine\n\n\
                    ```text\nx\n- in code\n```\n\nIn 2024 we\n2. wrote (not a list)\n";
        let found = list_by_accident(text);
        assert_eq!(
            found,
            vec![(2, "1. The test".to_string()), (6, "- dash".to_string())]
        );
    }
}
