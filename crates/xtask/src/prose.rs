//! How much prose each chapter asks of its reader, read from the chapters'
//! Markdown: the words of prose per chapter and the longest sentences.
//! The build prints both for every chapter; a teaching chapter (Parts I,
//! II and III: everything under [`TEACHING`]) may hold at most
//! [`MAX_WORDS`] words and no sentence over [`MAX_SENTENCE_WORDS`].
//!
//! What counts as prose: paragraphs, headings, list items, block quotes
//! and collapsed answers. What does not: code (fenced blocks and inline
//! `code`), math (`$$…$$` blocks and inline `$…$`), printed outputs and
//! figures (`{{#output}}`, `{{#figure}}` with its caption and alt text),
//! tables, HTML tags, comments and claim marks. A word is a run of
//! characters between spaces that holds a letter or a digit. A reference
//! `{{#ref figure:x}}` reads as one word ("Figure 2.1" on the page).
//!
//! Sentences are counted in paragraphs, list items and block quotes (not
//! in headings or tables). A sentence ends at a `.`, `?` or `!`
//! before a space, unless the word is an abbreviation ("e.g.", "i.e.",
//! "et al.", "cf.", an initial such as "J."); it also ends with its
//! paragraph.

use crate::Failure;
use std::fs;
use std::path::Path;

/// The chapters that teach: Part I (`src/m3`), Part II (`src/paper`) and
/// the part after the paper (`src/after`).
pub const TEACHING: [&str; 3] = ["src/m3/", "src/paper/", "src/after/"];

/// The most words of prose a teaching chapter may hold.
pub const MAX_WORDS: usize = 2500;

/// The most words a sentence of a teaching chapter may hold.
pub const MAX_SENTENCE_WORDS: usize = 45;

/// Whether the build fails on a teaching chapter over the limits. On: every
/// teaching chapter passes, and a new breach fails the build.
pub const ENFORCE: bool = true;

/// How many of each chapter's longest sentences the build prints.
pub const SHOWN: usize = 3;

/// Abbreviations whose final `.` does not end a sentence (lower case).
const ABBREVIATIONS: [&str; 22] = [
    "e.g.", "i.e.", "al.", "cf.", "vs.", "etc.", "resp.", "approx.", "fig.",
    "figs.", "eq.", "eqs.", "sec.", "ch.", "no.", "vol.", "pp.", "p.", "dr.",
    "prof.", "st.", "viz.",
];

/// Stand-ins for what prose skips inside a line: they hold no letter or
/// digit, so they count as no word, and keep punctuation after them.
const MATH: &str = "$…$";
const CODE: &str = "`…`";

/// One sentence of a chapter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sentence {
    /// The line it starts on, from 1.
    pub line: usize,
    /// Its words.
    pub words: usize,
    /// Its text as prose reads it (math as `$…$`, code as `` `…` ``).
    pub text: String,
}

impl Sentence {
    /// Its first `n` words, with "…" if there are more.
    pub fn opening(&self, n: usize) -> String {
        let tokens: Vec<&str> = self.text.split_whitespace().collect();
        let more = if tokens.len() > n { " …" } else { "" };
        format!("{}{more}", tokens[..tokens.len().min(n)].join(" "))
    }
}

/// The prose of one chapter, measured.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Prose {
    /// Words of prose (see the module's documentation).
    pub words: usize,
    /// Every sentence of its paragraphs, in order.
    pub sentences: Vec<Sentence>,
}

impl Prose {
    /// Its sentences, longest first (the earlier of two equal ones first).
    pub fn longest(&self) -> Vec<&Sentence> {
        let mut all: Vec<&Sentence> = self.sentences.iter().collect();
        all.sort_by(|a, b| b.words.cmp(&a.words).then(a.line.cmp(&b.line)));
        all
    }
}

/// What a block of lines is, for counting.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A paragraph, a list item or a block quote: words and sentences.
    Paragraph,
    /// A heading: words only.
    WordsOnly,
}

/// Measure the prose of a chapter's Markdown.
pub fn measure(text: &str) -> Prose {
    let mut prose = Prose::default();
    // The open block: its kind and its lines with their numbers.
    let mut block: Option<(Kind, Vec<(String, usize)>)> = None;
    let mut fence: Option<&str> = None;
    let (mut math, mut comment, mut figure) = (false, false, false);
    let flush = |block: &mut Option<(Kind, Vec<(String, usize)>)>,
                 prose: &mut Prose| {
        if let Some((kind, lines)) = block.take() {
            let tokens = tokens_of(&lines);
            prose.words += tokens.iter().filter(|(t, _)| is_word(t)).count();
            if kind == Kind::Paragraph {
                prose.sentences.extend(sentences(&tokens));
            }
        }
    };
    for (n, raw) in text.lines().enumerate() {
        let line_no = n + 1;
        let t = raw.trim();
        if let Some(marker) = fence {
            if t.starts_with(marker) {
                fence = None;
            }
            continue;
        }
        if comment {
            if t.contains("-->") {
                comment = false;
            }
            continue;
        }
        if figure {
            if t == "}}" || t.is_empty() {
                figure = false;
            }
            continue;
        }
        if math {
            if t.ends_with("$$") {
                math = false;
            }
            continue;
        }
        if t.starts_with("```") || t.starts_with("~~~") {
            flush(&mut block, &mut prose);
            fence = Some(&t[..3]);
            continue;
        }
        if t.starts_with("$$") {
            flush(&mut block, &mut prose);
            math = !(t.len() > 2 && t.ends_with("$$"));
            continue;
        }
        if t.starts_with("<!--") {
            comment = !t.contains("-->");
            continue;
        }
        if t.starts_with("{{#figure") {
            flush(&mut block, &mut prose);
            figure = !t.ends_with("}}");
            continue;
        }
        if t.is_empty() {
            flush(&mut block, &mut prose);
            continue;
        }
        if t.starts_with('|')
            || ["{{#output", "{{#include", "{{#claims", "{{#rustdoc_include"]
                .iter()
                .any(|d| t.starts_with(d))
        {
            flush(&mut block, &mut prose);
            continue;
        }
        if t.starts_with('#') {
            // A heading: words of its own, no sentence.
            flush(&mut block, &mut prose);
            let heading = t.trim_start_matches('#').to_string();
            block = Some((Kind::WordsOnly, vec![(heading, line_no)]));
            flush(&mut block, &mut prose);
            continue;
        }
        if let Some(rest) = list_item(t) {
            flush(&mut block, &mut prose);
            block = Some((Kind::Paragraph, vec![(rest.to_string(), line_no)]));
            continue;
        }
        let body = t.trim_start_matches('>').trim_start();
        match block.as_mut() {
            // A line continues the open paragraph or list item.
            Some((_, lines)) => lines.push((body.to_string(), line_no)),
            None => {
                let lines = vec![(body.to_string(), line_no)];
                block = Some((Kind::Paragraph, lines));
            }
        }
    }
    flush(&mut block, &mut prose);
    prose
}

/// The text of a list item after its marker (`- `, `* `, `+ `, `1. `,
/// `1) `), if `t` (trimmed) starts one.
fn list_item(t: &str) -> Option<&str> {
    for marker in ["- ", "* ", "+ "] {
        if let Some(rest) = t.strip_prefix(marker) {
            return Some(rest);
        }
    }
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if (1..10).contains(&digits) {
        let rest = &t[digits..];
        if let Some(rest) = rest.strip_prefix(". ").or(rest.strip_prefix(") "))
        {
            return Some(rest);
        }
    }
    None
}

/// Whether a token is a word: it holds a letter or a digit.
fn is_word(token: &str) -> bool {
    token.chars().any(char::is_alphanumeric)
}

/// The tokens of a block of prose, each with its line: the block's lines
/// joined (inline math and code may run across a line break), HTML tags,
/// comments, claim marks and images removed, links reduced to their text,
/// a reference made one word, inline math and code made stand-ins.
fn tokens_of(lines: &[(String, usize)]) -> Vec<(String, usize)> {
    let Some(&(_, first)) = lines.first() else {
        return Vec::new();
    };
    let joined: Vec<&str> = lines.iter().map(|(l, _)| l.as_str()).collect();
    let text = plain(&joined.join("\n"));
    let mut out = Vec::new();
    let mut line = first;
    let mut word = String::new();
    for c in text.chars() {
        if c.is_whitespace() {
            if !word.is_empty() {
                out.push((std::mem::take(&mut word), line));
            }
            if c == '\n' {
                line += 1;
            }
        } else {
            word.push(c);
        }
    }
    if !word.is_empty() {
        out.push((word, line));
    }
    out
}

/// Markdown as prose reads it (see [`tokens_of`]); the line breaks inside
/// what it removes are kept, after the stand-in.
pub fn plain(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("{{#") {
            let end = after.find("}}").map_or(rest.len(), |e| e + 5);
            if after.starts_with("ref ") {
                out.push_str("Ref");
            }
            rest = &rest[end.min(rest.len())..];
            continue;
        }
        if c == '\\' && rest.len() > 1 {
            // An escaped character is itself ("\$" is a dollar sign).
            let next = rest[1..].chars().next().expect("a character");
            out.push(next);
            rest = &rest[1 + next.len_utf8()..];
            continue;
        }
        if c == '$' {
            let close = rest[1..].find('$').map(|e| e + 2);
            if let Some(end) = close {
                out.push_str(MATH);
                out.push_str(&"\n".repeat(rest[..end].matches('\n').count()));
                rest = &rest[end..];
                continue;
            }
        }
        if c == '`' {
            let ticks = rest.bytes().take_while(|b| *b == b'`').count();
            let fence = &rest[..ticks];
            if let Some(end) = rest[ticks..].find(fence) {
                let end = ticks + end + ticks;
                out.push_str(CODE);
                out.push_str(&"\n".repeat(rest[..end].matches('\n').count()));
                rest = &rest[end..];
                continue;
            }
        }
        if c == '<' {
            if let Some(end) = rest.find('>') {
                let tag = &rest[1..end];
                let is_tag = tag.starts_with(|c: char| {
                    c.is_ascii_alphabetic() || c == '/' || c == '!'
                });
                if is_tag {
                    out.push(' ');
                    rest = &rest[end + 1..];
                    continue;
                }
            }
        }
        if c == '!' && rest.starts_with("![") {
            // An image: its alt text and target are not prose.
            if let Some(end) = link_end(&rest[1..]) {
                rest = &rest[1 + end..];
                continue;
            }
        }
        if c == ']' && rest.starts_with("](") {
            // The target of a link: its text was kept.
            let end = rest.find(')').map_or(rest.len(), |e| e + 1);
            rest = &rest[end..];
            continue;
        }
        if c == '[' || c == ']' {
            rest = &rest[1..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// For `[text](target)` at the start of `s`, the offset just past `)`.
fn link_end(s: &str) -> Option<usize> {
    let close = s.find("](")?;
    let end = s[close..].find(')')?;
    Some(close + end + 1)
}

/// Split the tokens of a paragraph into sentences.
fn sentences(tokens: &[(String, usize)]) -> Vec<Sentence> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 0..tokens.len() {
        if i + 1 == tokens.len() || ends_sentence(&tokens[i].0) {
            let part = &tokens[start..=i];
            let words = part.iter().filter(|(t, _)| is_word(t)).count();
            if words > 0 {
                out.push(Sentence {
                    line: part[0].1,
                    words,
                    text: part
                        .iter()
                        .map(|(t, _)| t.as_str())
                        .collect::<Vec<_>>()
                        .join(" "),
                });
            }
            start = i + 1;
        }
    }
    out
}

/// Whether `token` ends a sentence.
fn ends_sentence(token: &str) -> bool {
    let core =
        token.trim_end_matches([')', '"', '\'', '”', '’', '*', '_', ']']);
    let Some(last) = core.chars().last() else {
        return false;
    };
    if !matches!(last, '.' | '?' | '!') {
        return false;
    }
    if last == '.' {
        let word = core.trim_start_matches(['(', '"', '“', '‘', '*', '_']);
        let lower = word.to_lowercase();
        if ABBREVIATIONS.contains(&lower.as_str()) || lower.ends_with(".g.") {
            return false;
        }
        // An initial: one capital letter and its dot ("J. Schmidhuber").
        let mut chars = word.chars();
        if let (Some(c), Some('.'), None) =
            (chars.next(), chars.next(), chars.next())
            && c.is_uppercase()
        {
            return false;
        }
    }
    true
}

/// The chapters under `root/src` in the order of `src/SUMMARY.md` (any
/// not listed there after them, by name), each as its path from `root`
/// and its text.
pub fn chapters(root: &Path) -> Result<Vec<(String, String)>, Failure> {
    let src = root.join("src");
    let summary =
        fs::read_to_string(src.join("SUMMARY.md")).unwrap_or_default();
    let mut order: Vec<String> = Vec::new();
    for piece in summary.split("](").skip(1) {
        if let Some(end) = piece.find(')') {
            let target = piece[..end].trim();
            if target.ends_with(".md") {
                order.push(format!("src/{target}"));
            }
        }
    }
    let mut found = Vec::new();
    for path in crate::links::all_files(&src)? {
        if path.extension().is_none_or(|e| e != "md")
            || path.file_name().is_some_and(|n| n == "SUMMARY.md")
        {
            continue;
        }
        let rel = path.strip_prefix(root).unwrap_or(&path);
        let rel = rel.display().to_string().replace('\\', "/");
        found.push((rel, fs::read_to_string(&path)?));
    }
    let rank = |rel: &str| order.iter().position(|o| o == rel);
    found.sort_by(|a, b| match (rank(&a.0), rank(&b.0)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.0.cmp(&b.0),
    });
    Ok(found)
}

/// Whether the chapter at `rel` (a path from the root) teaches.
pub fn teaching(rel: &str) -> bool {
    TEACHING.iter().any(|t| rel.starts_with(t))
}

/// The prose of every chapter under `root/src`, in the book's order.
pub fn measure_book(root: &Path) -> Result<Vec<(String, Prose)>, Failure> {
    Ok(chapters(root)?
        .into_iter()
        .map(|(rel, text)| {
            let prose = measure(&text);
            (rel, prose)
        })
        .collect())
}

/// The report the build prints, and the teaching chapters' breaches of
/// the limits, one line each.
pub fn report(book: &[(String, Prose)]) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut breaches = Vec::new();
    let width = book.iter().map(|(r, _)| r.len()).max().unwrap_or(0);
    out.push_str(&format!(
        "{:<width$}  words  longest sentences (words, line)\n",
        "chapter"
    ));
    for (rel, prose) in book {
        let longest = prose.longest();
        let top: Vec<String> = longest
            .iter()
            .take(SHOWN)
            .map(|s| format!("{} (l. {})", s.words, s.line))
            .collect();
        let mark = if teaching(rel) {
            ""
        } else {
            "  (not teaching)"
        };
        out.push_str(&format!(
            "{rel:<width$}  {:>5}  {}{mark}\n",
            prose.words,
            top.join(", ")
        ));
        if let Some(s) = longest.first() {
            out.push_str(&format!(
                "{:<width$}         longest: \"{}\"\n",
                "",
                s.opening(12)
            ));
        }
        if !teaching(rel) {
            continue;
        }
        if prose.words > MAX_WORDS {
            breaches.push(format!(
                "{rel}: {} words of prose (more than {MAX_WORDS})",
                prose.words
            ));
        }
        for s in prose
            .sentences
            .iter()
            .filter(|s| s.words > MAX_SENTENCE_WORDS)
        {
            breaches.push(format!(
                "{rel}:{}: a sentence of {} words (more than \
                 {MAX_SENTENCE_WORDS}): \"{}\"",
                s.line,
                s.words,
                s.opening(14)
            ));
        }
    }
    (out, breaches)
}

/// The build's prose check of the book at `root`: print every chapter's
/// words and longest sentences, then the teaching chapters' breaches of
/// the limits; fail on one if `enforce`, else only report them.
pub fn check(root: &Path, enforce: bool) -> Result<(), Failure> {
    crate::step(&format!(
        "prose: words per chapter and the longest sentences (a teaching \
         chapter holds at most {MAX_WORDS} words, no sentence over \
         {MAX_SENTENCE_WORDS}){}",
        if enforce { "" } else { "; report only" }
    ));
    let (printed, breaches) = report(&measure_book(root)?);
    print!("{printed}");
    if breaches.is_empty() {
        println!("every teaching chapter is within the limits");
        return Ok(());
    }
    let list = breaches.join("\n");
    if enforce {
        return Err(Failure(format!(
            "a teaching chapter is over the prose limits (split the \
             sentence, or move machinery to an appendix):\n{list}"
        )));
    }
    println!(
        "over the limits ({} breaches; not enforced yet, see \
         prose::ENFORCE):\n{list}",
        breaches.len()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> usize {
        measure(text).words
    }

    #[test]
    fn only_prose_is_counted() {
        let text = "# Two words\n\nOne two three $x^2 + y$ four `code here` \
                    five.\n\n$$\na + b = c\n$$\n\n```rust\nlet x = 1;\n```\n\n\
                    {{#output attention-walkthrough}}\n\n{{#figure heat\n\
                    caption: Not counted at all.\nalt: Nor this.\n}}\n\n\
                    | a | table |\n|---|---|\n| not | counted |\n\n\
                    - a list item\n  continued here\n\n<!-- a\ncomment -->\n\
                    <details class=\"answer\">\n<summary>Answer</summary>\n\n\
                    See [the link text](x.md#y) and {{#ref figure:heat}}. \
                    {{#claim some_test}}\n</details>\n";
        // 2 (heading) + 5 + 5 (the list) + 1 (Answer) + 6 (See the link
        // text and Ref).
        assert_eq!(words(text), 19);
    }

    #[test]
    fn sentences_end_at_full_stops_but_not_after_abbreviations() {
        let text = "Keys are columns, e.g. the key $k_t$. The paper \
                    (Schlag et al. 2021) writes J. Schmidhuber. Does it \
                    hold? Yes! It costs approx. three steps; i.e. few.\n\n\
                    A new paragraph\nwithout a stop\n\nand more.\n";
        let s: Vec<(usize, usize)> = measure(text)
            .sentences
            .iter()
            .map(|s| (s.line, s.words))
            .collect();
        assert_eq!(s, [(1, 6), (1, 9), (1, 3), (1, 1), (1, 7), (3, 6), (6, 2)]);
        let first = &measure(text).sentences[0];
        assert_eq!(first.text, "Keys are columns, e.g. the key $…$.");
    }

    #[test]
    fn inline_math_may_run_across_a_line_break() {
        let text = "The write $\\mathbf{S}_t =\n\\mathbf{S}_{t-1} + v$ adds one\n\
                    outer product. Next sentence.\n";
        let prose = measure(text);
        let s: Vec<(usize, usize, &str)> = prose
            .sentences
            .iter()
            .map(|s| (s.line, s.words, s.text.as_str()))
            .collect();
        assert_eq!(
            s,
            [
                (1, 6, "The write $…$ adds one outer product."),
                (3, 2, "Next sentence.")
            ]
        );
    }

    #[test]
    fn headings_and_tables_hold_no_sentences_but_list_items_do() {
        let long = "word ".repeat(60);
        let text = format!(
            "# {long}\n\n- {long}\n  {long}.\n\n  {long}\n\n1. {long}\n\n\
             | {long} |\n\n> Quoted {long}.\n"
        );
        let prose = measure(&text);
        let words: Vec<usize> =
            prose.sentences.iter().map(|s| s.words).collect();
        // The item and its continuation, the paragraph under it, the
        // numbered item, the quote; not the heading, not the table.
        assert_eq!(words, [120, 60, 60, 61], "{:?}", prose.sentences);
        assert_eq!(prose.words, 60 * 6 + 1);
    }

    #[test]
    fn the_report_names_each_breach_of_a_teaching_chapter_only() {
        let long = format!("{}end.", "word ".repeat(46));
        let many = "word. ".repeat(MAX_WORDS + 1);
        let book = [
            (
                "src/m3/a.md".to_string(),
                measure(&format!("Short. {long}")),
            ),
            ("src/paper/b.md".to_string(), measure(&many)),
            ("src/appendix/c.md".to_string(), measure(&long)),
        ];
        let (printed, breaches) = report(&book);
        assert_eq!(
            breaches,
            [
                "src/m3/a.md:1: a sentence of 47 words (more than 45): \
                 \"word word word word word word word word word word word \
                 word word word …\""
                    .to_string(),
                format!(
                    "src/paper/b.md: {} words of prose (more than 2500)",
                    MAX_WORDS + 1
                ),
            ]
        );
        assert!(printed.contains("src/m3/a.md"), "{printed}");
        assert!(printed.contains("47 (l. 1), 1 (l. 1)"), "{printed}");
        assert!(printed.contains("(not teaching)"), "{printed}");
    }

    #[test]
    fn chapters_come_in_the_order_of_the_summary() {
        let root = std::env::temp_dir()
            .join(format!("xtask-prose-order-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join("src/m3")).unwrap();
        fs::write(
            root.join("src/SUMMARY.md"),
            "# Summary\n\n[Intro](z.md)\n- [A](m3/b.md)\n- [B](a.md)\n",
        )
        .unwrap();
        for f in ["z.md", "m3/b.md", "a.md", "extra.md"] {
            fs::write(root.join("src").join(f), "Text.\n").unwrap();
        }
        let names: Vec<String> = chapters(&root)
            .unwrap()
            .into_iter()
            .map(|(r, _)| r)
            .collect();
        assert_eq!(
            names,
            ["src/z.md", "src/m3/b.md", "src/a.md", "src/extra.md"]
        );
        fs::remove_dir_all(&root).unwrap();
    }
}
